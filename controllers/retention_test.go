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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/archive"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// bigResult is what the retention tests' tool answers: past the default
// --seal-value-bytes (4 KiB), so every run has a segment.
var bigResult = `{"ok":true,"receipt":"` + strings.Repeat("r", 8<<10) + `"}`

// retentionAgent is an Agent whose runs ask before calling pay (so each
// run has a decision) and whose answer is sealed into a segment.
func retentionAgent(h *harness, name string, ts *toolServer, retention exagentv1.RetentionSpec) {
	h.t.Helper()
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(bigResult))
	}
	h.createAgent(name, exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "pay", map[string]any{"amount": 5}), fixture.TextTurn("paid"),
		),
		Tools:     []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy:    fixture.AskPolicy("pay"),
		Retention: retention,
	})
}

// approvedRun creates a run, approves its call as alice and waits for its
// end: an ended run with a decision, a receipt and a segment.
func (h *harness) approvedRun(name, agent string, mutate ...func(*exagentv1.AgentRunSpec)) *exagentv1.AgentRun {
	h.t.Helper()
	h.createRun(name, agent, mutate...)
	h.approve(h.waitPhase(name, exagentv1.PhaseAwaitingApproval), "ok")
	return h.waitPhase(name, exagentv1.PhaseSucceeded)
}

// waitGone waits until run name no longer exists.
func (h *harness) waitGone(name string) {
	h.t.Helper()
	if !eventually(func() bool {
		return apierrors.IsNotFound(h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &exagentv1.AgentRun{}))
	}) {
		h.t.Fatalf("run %s was not deleted", name)
	}
}

func (h *harness) exists(name string) bool {
	h.t.Helper()
	err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &exagentv1.AgentRun{})
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Fatal(err)
	}
	return err == nil
}

// decisionsNaming lists the decisions whose spec.runRef names run.
func (h *harness) decisionsNaming(run string) []exagentv1.ApprovalDecision {
	h.t.Helper()
	var list exagentv1.ApprovalDecisionList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []exagentv1.ApprovalDecision
	for _, d := range list.Items {
		if d.Spec.RunRef.Name == run {
			out = append(out, d)
		}
	}
	return out
}

// probe proves the reaper has looked at everything queued before it: a
// run with TTL 0, created after the others ended, is deleted only once the
// single retention worker reached it.
func (h *harness) probe(name, agent string) {
	h.t.Helper()
	h.approvedGone(name, agent, func(r *exagentv1.AgentRunSpec) { r.TTLSecondsAfterFinished = ptr.To[int32](0) })
}

// approvedGone is approvedRun for a run deleted as soon as it ends (TTL 0):
// the reaper may delete it before a poll sees it Succeeded, so the end is
// read from the run's Events, which outlive it.
func (h *harness) approvedGone(name, agent string, mutate ...func(*exagentv1.AgentRunSpec)) {
	h.t.Helper()
	h.createRun(name, agent, mutate...)
	h.approve(h.waitPhase(name, exagentv1.PhaseAwaitingApproval), "ok")
	h.waitGone(name)
	h.waitEvents(name, exagentv1.EventRunSucceeded)
}

// TestRetentionTTL: an ended run is deleted with its segments and
// decisions once its TTL has passed on the controllers' clock — a fake
// one, stepped by the test: the deletion cannot come from waiting — and
// not before; TTL 0 deletes at once; a run with no TTL anywhere is never
// deleted. Each decision was given its run as owner on the way.
func TestRetentionTTL(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk, RetentionWorkers: 1})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{})

	kept := h.approvedRun("kept", "pay")
	run := h.approvedRun("r", "pay", func(r *exagentv1.AgentRunSpec) { r.TTLSecondsAfterFinished = ptr.To[int32](300) })
	if len(segmentsOf(t, h, run)) == 0 || len(h.decisionsNaming("r")) != 1 {
		t.Fatalf("the run has %d segments and %d decisions, want some of each", len(segmentsOf(t, h, run)), len(h.decisionsNaming("r")))
	}
	if !eventually(func() bool {
		ds := h.decisionsNaming("r")
		return len(ds) == 1 && slices.ContainsFunc(ds[0].OwnerReferences, func(o metav1.OwnerReference) bool {
			return o.Kind == "AgentRun" && o.Name == "r" && o.UID == run.UID && o.Controller == nil
		})
	}) {
		t.Fatalf("the decision's owners are %+v, want run r (uid %s)", h.decisionsNaming("r")[0].OwnerReferences, run.UID)
	}

	clk.Step(299 * time.Second)
	h.probe("probe-1", "pay")
	if !h.exists("r") {
		t.Fatal("the run was deleted before its TTL passed on the controllers' clock")
	}
	clk.Step(2 * time.Second)
	h.waitGone("r")
	// The run goes first, its dependents right after it.
	if !eventually(func() bool { return len(segmentsOf(t, h, run)) == 0 }) {
		t.Errorf("%d segments of the deleted run remain", len(segmentsOf(t, h, run)))
	}
	if !eventually(func() bool { return len(h.decisionsNaming("r")) == 0 }) {
		t.Errorf("%d decisions of the deleted run remain", len(h.decisionsNaming("r")))
	}

	clk.Step(365 * 24 * time.Hour)
	h.probe("probe-2", "pay")
	if !h.exists("kept") || len(segmentsOf(t, h, kept)) == 0 || len(h.decisionsNaming("kept")) != 1 {
		t.Error("the run with no TTL (none on the run, its Agent or the manager) was deleted, or lost its segments or decision")
	}
}

// TestRetentionDefaults: the run's TTL, else its Agent's, else the
// manager's --default-ttl-seconds-after-finished; 0 on the Agent deletes at
// once although the manager's default is an hour.
func TestRetentionDefaults(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk, DefaultTTLAfterFinished: time.Hour})
	retentionAgent(h, "inherit", ts, exagentv1.RetentionSpec{})
	h.createAgent("now", func() exagentv1.AgentSpec {
		a := &exagentv1.Agent{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "inherit"}, a); err != nil {
			t.Fatal(err)
		}
		a.Spec.Retention.TTLSecondsAfterFinished = ptr.To[int32](0)
		return a.Spec
	}())
	h.approvedRun("inherits", "inherit")
	h.approvedGone("at-once", "now")
	if !h.exists("inherits") {
		t.Fatal("the run that inherits the manager's hour was deleted at once")
	}
	clk.Step(time.Hour + 2*time.Second)
	h.waitGone("inherits")
}

// archiveSink is a sink answering 204, signing key included.
func archiveAgent(t *testing.T, h *harness, ts *toolServer, s *sink, ttl int32) []byte {
	t.Helper()
	key := []byte("0123456789abcdef0123456789abcdef")
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{
		TTLSecondsAfterFinished: ptr.To(ttl),
		Archive:                 &exagentv1.NotifySink{Name: "audit", URL: s.srv.URL + "/archive", SigningSecretRef: h.signingSecret("archive-key", key)},
	})
	return key
}

// archived decodes the archives the sink received.
func archived(t *testing.T, s *sink) []archive.Event {
	t.Helper()
	var out []archive.Event
	for _, d := range s.deliveries() {
		var ev archive.Event
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			t.Fatalf("an archive is not a CloudEvent: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// TestRetentionArchive: before the run is deleted its sink receives,
// signed, exactly its record: the transcript read back from the segments
// equals the run's, every call with its result, the decision with its
// actor, reason and receipt, the receipt in the run; then the run goes.
func TestRetentionArchive(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	s := newSink(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	key := archiveAgent(t, h, ts, s, 60)
	run := h.approvedRun("r", "pay")
	stored := &exagentv1.AgentRun{}
	if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(run), stored); err != nil {
		t.Fatal(err)
	}
	transcript, chain := transcriptOf(t, stored)
	if len(chain) == 0 {
		t.Fatal("the run sealed no segment: the test would not read one back")
	}
	calls, err := segment.SealedCalls(chain, stored.Status.Calls)
	if err != nil {
		t.Fatal(err)
	}
	for i := range calls { // the archive holds every value inline, no refs
		calls[i].ArgsRef = nil
		if o := calls[i].Outcome; o != nil {
			o.ResultRef = nil
		}
	}
	decision := h.decisionsNaming("r")
	if len(s.deliveries()) != 0 {
		t.Fatal("archived before the TTL passed")
	}

	clk.Step(61 * time.Second)
	h.waitGone("r")
	got := s.deliveries()
	if len(got) != 1 {
		t.Fatalf("the sink received %d requests, want exactly one archive", len(got))
	}
	verifySignature(t, got[0], key)
	ev := archived(t, s)[0]
	if ev.Type != exagentv1.CloudEventArchived || ev.ID != string(run.UID)+".run-archived" || got[0].Header.Get("webhook-id") != ev.ID ||
		ev.Subject != string(exagentv1.PhaseSucceeded) || got[0].Header.Get("Content-Type") != archive.ContentType {
		t.Errorf("envelope: type %q id %q (webhook-id %q) subject %q", ev.Type, ev.ID, got[0].Header.Get("webhook-id"), ev.Subject)
	}
	r := ev.Data
	if diff := cmp.Diff(transcript, r.Transcript); diff != "" {
		t.Errorf("archived transcript (-the run's, read through its segments +archived):\n%s", diff)
	}
	if diff := cmp.Diff(calls, r.Calls); diff != "" {
		t.Errorf("archived calls (-the run's +archived):\n%s", diff)
	}
	if len(r.Calls) != 1 || r.Calls[0].Outcome == nil || r.Calls[0].Outcome.Result != bigResult {
		t.Errorf("the call's sealed result is not in the archive whole")
	}
	if r.Run.UID != run.UID || r.Run.Spec.Input != run.Spec.Input || r.Run.Status.Phase != exagentv1.PhaseSucceeded ||
		r.Run.Status.Transcript == nil || r.Run.Status.Transcript.Head != stored.Status.Transcript.Head {
		t.Errorf("archived run: uid %s phase %s", r.Run.UID, r.Run.Status.Phase)
	}
	if r.Output != "paid" {
		t.Errorf("archived output = %q, want the final answer", r.Output)
	}
	if len(r.Decisions) != 1 {
		t.Fatalf("archived %d decisions, want 1", len(r.Decisions))
	}
	d := r.Decisions[0]
	if d.Name != decision[0].Name || d.UID != decision[0].UID || d.Spec.Actor == nil || d.Spec.Actor.Username != alice || d.Spec.Reason != "ok" ||
		d.Status.Phase != exagentv1.DecisionApplied || d.Status.Receipt == nil || d.Status.Receipt.DecisionName != decision[0].Name {
		t.Errorf("archived decision: name %s, spec %+v, status %+v", d.Name, d.Spec, d.Status)
	}
	if len(r.Receipts) != 1 || r.Receipts[0].Actor == nil || r.Receipts[0].Actor.Username != alice || r.Receipts[0].DecisionName != d.Name {
		t.Errorf("archived receipts = %+v, want alice's", r.Receipts)
	}
	if len(r.Approvals) != 1 || r.Approvals[0].State != exagentv1.ApprovalApproved || r.Approvals[0].Reason != "ok" {
		t.Errorf("archived approvals = %+v", r.Approvals)
	}
	var names []string
	for _, seg := range chain {
		names = append(names, seg.Name)
	}
	if diff := cmp.Diff(names, r.Segments); diff != "" {
		t.Errorf("archived segment names (-chain +archived):\n%s", diff)
	}
	if !eventually(func() bool { return len(segmentsOf(t, h, run)) == 0 }) { // the run goes first, its dependents right after it
		t.Errorf("%d segments remain", len(segmentsOf(t, h, run)))
	}
	if !eventually(func() bool { return len(h.decisionsNaming("r")) == 0 }) {
		t.Errorf("%d decisions remain", len(h.decisionsNaming("r")))
	}
}

// TestRetentionArchiveCrashBeforeJournal: the manager stops after the
// sink's 2xx and before it journals the delivery (a hook abandons the
// work there, returning an error, so no write happens): nothing is
// journaled or deleted; the next manager sends the archive again with the
// same CloudEvent id, then deletes the run.
func TestRetentionArchiveCrashBeforeJournal(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	s := newSink(t)
	clk := clocktesting.NewFakeClock(time.Now())
	crashed := make(chan struct{})
	var once sync.Once
	first := h.startManagerWith(controllers.Options{Clock: clk}, func(kill func()) controllers.Hooks {
		return controllers.Hooks{BeforeArchiveJournal: func(_ context.Context, run types.NamespacedName, sent error) error {
			if run.Name != "r" || sent != nil {
				return nil
			}
			once.Do(func() { kill(); close(crashed) })
			return errors.New("crash: after the archive's 2xx, before its journal")
		}}
	})
	t.Cleanup(first.stop)
	archiveAgent(t, h, ts, s, 0)
	run := h.approvedRun("r", "pay")
	waitClosed(t, crashed, "the archive's answer")
	first.stop()
	left := h.waitRun("r", "still there", func(*exagentv1.AgentRun) bool { return true })
	if left.Status.Archive != nil || len(s.deliveries()) != 1 {
		t.Fatalf("after the crash: archive journal %+v, %d deliveries; want none journaled and one sent", left.Status.Archive, len(s.deliveries()))
	}
	if len(segmentsOf(t, h, run)) == 0 || len(h.decisionsNaming("r")) != 1 {
		t.Fatal("the crashed manager deleted part of the run before journaling its archive")
	}

	h.startManager(controllers.Options{Clock: clk})
	h.waitGone("r")
	evs := archived(t, s)
	if len(evs) != 2 || evs[0].ID != evs[1].ID || evs[0].ID != string(run.UID)+".run-archived" {
		t.Fatalf("archives sent: %d, ids %v; want two with the same id", len(evs), ids(evs))
	}
	if diff := cmp.Diff(evs[0].Data.Transcript, evs[1].Data.Transcript); diff != "" {
		t.Errorf("the second archive's transcript differs (-first +second):\n%s", diff)
	}
	if !eventually(func() bool { return len(segmentsOf(t, h, run)) == 0 }) { // the run goes first, its dependents right after it
		t.Errorf("%d segments remain", len(segmentsOf(t, h, run)))
	}
}

func ids(evs []archive.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// TestRetentionFailingSinkHoldsTheRun: a sink that keeps failing holds
// the run — journaled attempts with backoff on the controllers' clock,
// condition Archived=False, a Warning Event, the held-runs gauge — and it
// is never deleted, however much time passes; once the sink answers 2xx
// the run goes.
func TestRetentionFailingSinkHoldsTheRun(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	s := newSink(t)
	s.respond = func(w http.ResponseWriter, _ *http.Request, _ int) {
		http.Error(w, "archive store is down", http.StatusServiceUnavailable)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	archiveAgent(t, h, ts, s, 0)
	h.approvedRun("r", "pay")

	held := h.waitRun("r", "its archive failed", func(r *exagentv1.AgentRun) bool {
		return r.Status.Archive != nil && r.Status.Archive.Attempts >= 1
	})
	rec := held.Status.Archive
	if rec.State != exagentv1.ArchivePending || rec.Sink != "audit" || !strings.Contains(rec.LastError, "HTTP 503: archive store is down") {
		t.Errorf("journal = %+v", rec)
	}
	c := meta.FindStatusCondition(held.Status.Conditions, exagentv1.ConditionArchived)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != exagentv1.ReasonArchiveSinkFailing ||
		!strings.Contains(c.Message, "never deleted unarchived") || !strings.Contains(c.Message, "fix the sink") {
		t.Errorf("Archived condition = %+v", c)
	}
	h.waitEvents("r", exagentv1.ReasonArchiveSinkFailing)
	if got := heldGauge(t, h.ns); got != 1 {
		t.Errorf("exagent_retention_held_runs{namespace=%q} = %v, want 1", h.ns, got)
	}

	for i := range 4 {
		clk.Step(10 * time.Minute)
		h.waitRun("r", fmt.Sprintf("attempt %d", i+2), func(r *exagentv1.AgentRun) bool {
			return r.Status.Archive != nil && r.Status.Archive.Attempts >= int32(i+2)
		})
	}
	if !h.exists("r") {
		t.Fatal("a run whose archive was never delivered was deleted")
	}
	if n := len(s.deliveries()); n != 5 {
		t.Errorf("the sink received %d attempts, want 5: one per backoff the clock passed", n)
	}

	s.mu.Lock()
	s.respond = nil
	s.mu.Unlock()
	clk.Step(10 * time.Minute)
	h.waitGone("r")
	evs := archived(t, s)
	for _, e := range evs {
		if e.ID != evs[0].ID {
			t.Errorf("archive ids differ across attempts: %v", ids(evs))
			break
		}
	}
	if got := heldGauge(t, h.ns); got != 0 {
		t.Errorf("exagent_retention_held_runs = %v after the delivery, want 0", got)
	}
}

// heldGauge is exagent_retention_held_runs of ns.
func heldGauge(t *testing.T, ns string) float64 {
	return runsGauge(t, "exagent_retention_held_runs", ns)
}

// TestRetentionKeepLast: an Agent with keepLast 2 keeps exactly its two
// newest ended runs (by when they ended), each older one deleted with
// its segments and decisions.
func TestRetentionKeepLast(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{KeepLast: ptr.To[int32](2)})
	runs := map[string]*exagentv1.AgentRun{}
	names := func() []string {
		var list exagentv1.AgentRunList
		if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range list.Items {
			out = append(out, r.Name)
		}
		slices.Sort(out)
		return out
	}
	waitNames := func(want ...string) {
		t.Helper()
		if !eventually(func() bool { return slices.Equal(names(), want) }) {
			t.Fatalf("runs = %v, want exactly %v", names(), want)
		}
	}
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("r%d", i)
		runs[name] = h.approvedRun(name, "pay")
		clk.Step(2 * time.Second) // the next run ends later
	}
	waitNames("r4", "r5")
	for _, gone := range []string{"r1", "r2", "r3"} {
		if !eventually(func() bool { return len(segmentsOf(t, h, runs[gone])) == 0 && len(h.decisionsNaming(gone)) == 0 }) {
			t.Errorf("run %s: %d segments and %d decisions remain", gone, len(segmentsOf(t, h, runs[gone])), len(h.decisionsNaming(gone)))
		}
	}
	runs["r6"] = h.approvedRun("r6", "pay")
	waitNames("r5", "r6")
	if len(segmentsOf(t, h, runs["r5"])) == 0 || len(h.decisionsNaming("r5")) != 1 {
		t.Error("a kept run lost its segments or its decision")
	}
}

// TestRetentionTree: a child run is kept as long as its root, whatever
// its own Agent's TTL (0 here: reaped on its own it would be gone before
// its parent recorded its end), and is deleted with the root, deepest
// first, each archived to its own Agent's sink first.
func TestRetentionTree(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	s := newSink(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.tree(ts)
	retain := func(agent string, r exagentv1.RetentionSpec) {
		// The Agent reconciler writes the Agent's status meanwhile: read
		// again on a conflict, as any client of a live object must.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			a := &exagentv1.Agent{}
			if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: agent}, a); err != nil {
				return err
			}
			a.Spec.Retention = r
			return h.c.Update(context.Background(), a)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sink := &exagentv1.NotifySink{Name: "audit", URL: s.srv.URL}
	retain("triage", exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](60), Archive: sink})
	retain("fixer", exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0)})
	retain("deployer", exagentv1.RetentionSpec{Archive: sink})
	child, grandchild := h.pausedTree("triage-42")
	a := pendingApproval(t, h.get(grandchild))
	h.decide(alice, h.decision(grandchild, "alice").Approve(a))
	h.waitPhase("triage-42", exagentv1.PhaseSucceeded)
	retentionAgent(h, "pay", newToolServer(t), exagentv1.RetentionSpec{})
	h.probe("probe", "pay")
	if !h.exists(child) || !h.exists(grandchild) {
		t.Fatal("a child run was deleted on its own Agent's TTL, before its root's")
	}
	if n := len(s.deliveries()); n != 0 {
		t.Fatalf("%d archives sent before the root's TTL passed", n)
	}

	clk.Step(61 * time.Second)
	for _, name := range []string{"triage-42", child, grandchild} {
		h.waitGone(name)
	}
	var order []string
	for _, ev := range archived(t, s) {
		order = append(order, ev.Data.Run.Name)
	}
	if diff := cmp.Diff([]string{grandchild, "triage-42"}, order); diff != "" {
		t.Errorf("archives (-want +got): the grandchild's (its Agent has a sink) before its root's, none of the child's\n%s", diff)
	}
	if !eventually(func() bool { return len(h.decisionsNaming(grandchild)) == 0 }) {
		t.Errorf("%d decisions of the deleted grandchild remain", len(h.decisionsNaming(grandchild)))
	}
}
