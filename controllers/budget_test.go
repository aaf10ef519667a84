/*
Copyright 2026 The exagent Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/segment"
)

// A byte budget an operator can state (issue 20, item 1): a ResourceQuota
// on the count of segments bounds a namespace's bytes, and a run it
// refuses ends with a clear reason; the manager caps every run's
// transcript; the segment bytes are metrics.

const segmentsQuota = "count/agentrunsegments.exagent.io"

// sampleQuota is config/samples/quota/resourcequota.yaml moved to ns. The
// apiserver's quota admission only enforces a quota whose usage the quota
// controller has computed; envtest runs no controller manager, so the
// test writes the status it would (nothing used yet) and admission keeps
// it current from there.
func sampleQuota(t *testing.T, h *harness, hard map[corev1.ResourceName]string) *corev1.ResourceQuota {
	t.Helper()
	b, err := os.ReadFile("../config/samples/quota/resourcequota.yaml")
	if err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{}
	if err := yaml.UnmarshalStrict(b, q); err != nil {
		t.Fatalf("decoding the sample quota: %v", err)
	}
	for _, r := range []corev1.ResourceName{"count/agentruns.exagent.io", segmentsQuota, "count/approvaldecisions.exagent.io"} {
		if _, ok := q.Spec.Hard[r]; !ok {
			t.Fatalf("the sample quota does not bound %s: %v", r, q.Spec.Hard)
		}
	}
	q.Namespace = h.ns
	for r, v := range hard {
		q.Spec.Hard[r] = resource.MustParse(v)
	}
	ctx := context.Background()
	if err := h.c.Create(ctx, q); err != nil {
		t.Fatalf("the apiserver refuses the sample quota: %v", err)
	}
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	q.Status.Used = corev1.ResourceList{}
	for r := range q.Spec.Hard {
		q.Status.Used[r] = resource.MustParse("0")
	}
	if err := h.c.Status().Update(ctx, q); err != nil {
		t.Fatalf("writing the quota's usage: %v", err)
	}
	return q
}

// TestSegmentQuotaEndsTheRun: the namespace's ResourceQuota (the sample's,
// with 2 segments) lets the run seal twice; the third segment is refused.
// The run ends Failed, SegmentQuotaExceeded, with a message naming the
// quota and what to do, after one refusal and a handful of writes (no
// retry loop); every read the tool served is journaled with its outcome,
// and the status chain still verifies (nothing half-written: the stored
// head names only segments that exist).
func TestSegmentQuotaEndsTheRun(t *testing.T) {
	const size = 20 << 10 // over the seal threshold: every result is sealed at once
	h := newHarness(t)
	q := sampleQuota(t, h, map[corev1.ResourceName]string{segmentsQuota: "2"})
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, 10, size)
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL)
	m := h.startManager(controllers.Options{})
	// An input just under the seal threshold stays in the hot status until
	// the status nears its budget: the status that ends the run is past
	// that size, so ending it must not seal again (the same quota would
	// refuse that segment too).
	input := strings.Repeat("Read every page. ", 3500/len("Read every page. "))
	h.createRun("quota", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit, r.Input = exagentv1.Never, input })
	run := h.waitRun("quota", "ended", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseFailed || run.Status.Reason != exagentv1.ReasonSegmentQuotaExceeded {
		t.Fatalf("run %s %s: %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	for _, want := range []string{`ResourceQuota "` + q.Name + `"`, segmentsQuota, "raise the quota", "delete ended runs"} {
		if !strings.Contains(run.Status.Message, want) {
			t.Errorf("message %q does not say %q", run.Status.Message, want)
		}
	}
	h.waitEvents("quota", "RunFailed")

	// The quota held: two segments, both the run's, and the chain of the
	// stored status verifies and holds every message it names.
	var segs exagentv1.AgentRunSegmentList
	if err := h.c.List(context.Background(), &segs, client.InNamespace(h.ns)); err != nil {
		t.Fatal(err)
	}
	if len(segs.Items) != 2 {
		t.Fatalf("%d segments in the namespace, want the quota's 2", len(segs.Items))
	}
	msgs, chain := transcriptOf(t, run)
	if int(run.Status.Transcript.Segments) != len(chain) || len(chain) > 2 {
		t.Fatalf("the head names %d segments, the chain read %d", run.Status.Transcript.Segments, len(chain))
	}
	if len(msgs) < 3 {
		t.Fatalf("transcript of %d messages", len(msgs))
	}
	// Every read the tool served has its outcome journaled — a result in
	// the transcript, or the call's outcome in the status (the last one,
	// whose result could not be sealed, with a note in its place) — and
	// no call is left Started.
	reads := len(ps.calls())
	outcomes := map[string]bool{}
	for _, msg := range msgs {
		if msg.Role == exagentv1.RoleTool {
			outcomes[msg.ToolCallID] = true
		}
	}
	for _, c := range run.Status.Calls {
		switch c.State {
		case exagentv1.CallSucceeded, exagentv1.CallFailed:
			outcomes[c.ID] = true
		case exagentv1.CallStarted:
			t.Errorf("call %s is still Started in an ended run", c.ID)
		}
	}
	if reads == 0 || len(outcomes) != reads {
		t.Errorf("the tool served %d reads, %d outcomes are journaled", reads, len(outcomes))
	}
	// One refusal ends the run: no retry loop, no lease retaken.
	if refused, writes := m.ctrls.Store.Refused(), m.ctrls.Store.Writes(); refused != 1 || writes > int64(4*reads+6) {
		t.Errorf("%d writes refused and %d made for %d reads, want one refusal and a handful of writes", refused, writes, reads)
	}
}

// TestTranscriptCapClampsTheAgent: the manager's cap (Options, as set by
// --max-transcript-bytes) wins over an Agent asking for the most the CRD
// admits: the run ends TranscriptTooLarge before its transcript passes
// the cap, and its message names the cap.
func TestTranscriptCapClampsTheAgent(t *testing.T) {
	const size, capBytes = 40 << 10, 400 << 10
	h := newHarness(t)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, 50, size)
	asks := exagentv1.MaxTranscriptBytesLimit
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL, func(a *exagentv1.AgentSpec) { a.Limits.MaxTranscriptBytes = &asks })
	h.startManager(controllers.Options{MaxTranscriptBytes: capBytes})
	h.createRun("capped", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRun("capped", "ended", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseFailed || run.Status.Reason != exagentv1.ReasonTranscriptTooLarge ||
		!strings.Contains(run.Status.Message, "--max-transcript-bytes (409600)") ||
		!strings.Contains(run.Status.Message, "limits.maxTranscriptBytes (67108864)") {
		t.Fatalf("run %s %s: %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	msgs, _ := transcriptOf(t, run)
	if total, reads := transcriptSize(msgs), len(ps.calls()); total > capBytes || reads == 0 || reads > capBytes/size {
		t.Fatalf("%d reads, transcript %d bytes, cap %d", reads, total, capBytes)
	}
}

// TestSegmentBytesMetrics: exagent_segment_bytes_total counts the bytes a
// run's segments take when they are created and when the run is deleted,
// in the run's namespace, and exagent_segment_bytes is what the
// namespace's runs hold meanwhile.
func TestSegmentBytesMetrics(t *testing.T) {
	const turns, size = 3, 20 << 10
	h := newHarness(t)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, turns, size)
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL)
	h.startManager(controllers.Options{})
	h.createRun("metered", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRun("metered", "ended", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	held := run.Status.Transcript.SegmentBytes
	var stored int64
	for _, s := range segmentsOf(t, h, run) {
		_, n, err := segment.Name(&s.Spec)
		if err != nil {
			t.Fatal(err)
		}
		stored += int64(n)
	}
	if held == 0 || stored < held {
		t.Fatalf("the run holds %d segment bytes, the namespace stores %d", held, stored)
	}
	if got := segmentCounter(t, h.ns, "Created"); got != float64(stored) {
		t.Errorf(`exagent_segment_bytes_total{event="Created"} = %v, want the %d bytes stored`, got, stored)
	}
	if got := segmentGauge(t, h.ns); got != float64(held) {
		t.Errorf("exagent_segment_bytes = %v, want the %d bytes the run holds", got, held)
	}
	if err := h.c.Delete(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return segmentCounter(t, h.ns, "Deleted") == float64(held) }) {
		t.Errorf(`exagent_segment_bytes_total{event="Deleted"} = %v, want %d once the run is deleted`, segmentCounter(t, h.ns, "Deleted"), held)
	}
	if !eventually(func() bool { return segmentGauge(t, h.ns) == 0 }) {
		t.Errorf("exagent_segment_bytes = %v after the run was deleted, want 0", segmentGauge(t, h.ns))
	}
}

// segmentCounter reads exagent_segment_bytes_total of ns from the
// process's registry (what the manager's metrics endpoint serves).
func segmentCounter(t *testing.T, ns, event string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "exagent_segment_bytes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "namespace") == ns && label(m, "event") == event {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// segmentGauge is exagent_segment_bytes of ns.
func segmentGauge(t *testing.T, ns string) float64 { return runsGauge(t, "exagent_segment_bytes", ns) }

// runsGauge is the run gauge name of ns, collected over the apiserver's
// runs (the collector the manager registers reads its cache).
func runsGauge(t *testing.T, name, ns string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 256)
	go func() { controllers.NewRunsCollector(env().Client).Collect(ch); close(ch) }()
	var v float64
	for m := range ch {
		if !strings.Contains(m.Desc().String(), `"`+name+`"`) {
			continue
		}
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		if label(&pb, "namespace") == ns {
			v = pb.GetGauge().GetValue()
		}
	}
	return v
}
