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
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// BenchmarkPauseApproveFinish runs b.N runs (Scripted model, in-process
// http tool) through lookup → pause → approve → refund → finish against
// envtest, and measures in the same process, on the same apiserver, the raw
// ceiling: a loop of CAS status updates on one object of similar size.
//
// Metrics: runs/s; status writes per external call (model requests + tool
// calls); approve→resume latency p50/p99 (decision created → run seen
// running again, through a watch); the apiserver's CAS ceiling in writes/s
// and the run writes/s achieved, whose ratio is the point.
func BenchmarkPauseApproveFinish(b *testing.B) {
	h := &harness{t: b, ns: fmt.Sprintf("bench-%d-%d", b.N, time.Now().UnixNano()%100000), c: env().Client}
	ctx := context.Background()
	must(b, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	ts := newToolServer(b)
	mgr := h.startManagerNoCleanup(controllers.Options{MaxConcurrentReconciles: 8})
	defer mgr.stop()
	must(b, h.c.Create(ctx, &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: h.ns}, Spec: exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("lookup", "lookup", map[string]any{"amount": 1}),
			fixture.CallTurn("refund", "refund", map[string]any{"amount": 2}),
			fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("lookup", ts.url("/lookup")), fixture.HTTPTool("refund", ts.url("/refund"))},
		Policy: fixture.AskPolicy("refund"),
	}}))

	w, err := client.NewWithWatch(env().Config, client.Options{Scheme: env().Scheme})
	must(b, err)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watcher, err := w.Watch(wctx, &exagentv1.AgentRunList{}, client.InNamespace(h.ns))
	must(b, err)
	defer watcher.Stop()

	writes0 := mgr.ctrls.Store.Writes()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		must(b, h.c.Create(ctx, &exagentv1.AgentRun{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("run-%d", i), Namespace: h.ns},
			Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "bench"}, Input: "go"},
		}))
	}

	// Drive approvals from the watch: approve each run once it pauses, and
	// time how long until it is seen running again.
	var (
		mu        sync.Mutex
		approved  = map[string]time.Time{}
		measured  = map[string]bool{}
		latencies []time.Duration
		done      = map[string]exagentv1.AgentRunStatus{}
		wg        sync.WaitGroup
	)
	deadline := time.After(5 * time.Minute)
	for len(done) < b.N {
		select {
		case <-deadline:
			b.Fatalf("timed out: %d of %d runs finished", len(done), b.N)
		case ev := <-watcher.ResultChan():
			run, ok := ev.Object.(*exagentv1.AgentRun)
			if !ok {
				continue
			}
			st := run.Status
			mu.Lock()
			at, wasApproved := approved[run.Name]
			mu.Unlock()
			switch {
			case st.Phase == exagentv1.PhaseAwaitingApproval && !wasApproved:
				a := pendingApproval(b, run)
				mu.Lock()
				approved[run.Name] = time.Time{}
				mu.Unlock()
				wg.Add(1)
				go func(name string, a exagentv1.Approval) {
					defer wg.Done()
					t0 := time.Now()
					mu.Lock()
					approved[name] = t0
					mu.Unlock()
					actor := users[alice].actor
					err := users[alice].client.Create(ctx, &exagentv1.ApprovalDecision{
						ObjectMeta: metav1.ObjectMeta{Name: name + "-ok", Namespace: h.ns},
						Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: name},
							Decision: exagentv1.DecisionApprove, ApprovalID: a.ID, PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: &actor},
					})
					if err != nil {
						b.Errorf("approving %s: %v", name, err)
					}
				}(run.Name, a)
			case wasApproved && !at.IsZero() && !measured[run.Name] &&
				(st.Phase == exagentv1.PhaseRunning || st.Phase == exagentv1.PhaseSucceeded):
				latencies = append(latencies, time.Since(at))
				measured[run.Name] = true
			}
			if st.Phase.IsTerminal() {
				if st.Phase != exagentv1.PhaseSucceeded {
					b.Fatalf("run %s ended %s: %s", run.Name, st.Phase, st.Message)
				}
				done[run.Name] = st
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	wg.Wait()

	var calls int64
	for _, st := range done {
		calls += st.Ledger.Requests + st.Ledger.ToolCalls
	}
	writes := mgr.ctrls.Store.Writes() - writes0
	b.ReportMetric(float64(mgr.ctrls.Store.Conflicts())/float64(b.N), "conflicts/run")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(writes)/float64(calls), "writes/call")
	b.ReportMetric(float64(writes)/elapsed.Seconds(), "run-writes/s")
	p50, p99 := percentiles(latencies)
	b.ReportMetric(float64(p50.Microseconds())/1000, "resume-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "resume-p99-ms")
	mgr.stop() // the ceiling is measured on a quiet apiserver
	ceiling := casCeiling(b, h, done["run-0"])
	b.ReportMetric(ceiling, "ceiling-writes/s")
	b.ReportMetric(0, "ns/op")
}

// casCeiling measures the apiserver's raw rate of CAS status updates on
// one object carrying a finished run's status (so the size is the same).
func casCeiling(b *testing.B, h *harness, status exagentv1.AgentRunStatus) float64 {
	ctx := context.Background()
	cfg := rest.CopyConfig(env().Config)
	cfg.QPS, cfg.Burst = 2000, 4000 // the same client settings as the managers'
	c, err := client.New(cfg, client.Options{Scheme: env().Scheme})
	must(b, err)
	obj := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: "ceiling", Namespace: h.ns},
		Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "none"}, Input: "x"},
	}
	must(b, c.Create(ctx, obj))
	status.Phase = exagentv1.PhaseRunning
	const n = 400
	t0 := time.Now()
	for i := range n {
		status.Message = fmt.Sprintf("write %d", i)
		obj.Status = status
		must(b, c.Status().Update(ctx, obj)) // carries the resourceVersion of the last write
	}
	return n / time.Since(t0).Seconds()
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return at(0.50), at(0.99)
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
