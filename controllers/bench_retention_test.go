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
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

var (
	retentionRuns   = flag.Int("retention.runs", 10000, "BenchmarkRetention: ended runs to delete")
	retentionChain  = flag.Int("retention.chain-kib", 256, "BenchmarkRetention: KiB of sealed transcript per run")
	retentionMakers = flag.Int("retention.makers", 8, "BenchmarkRetention: writers that create the runs before the manager starts")
)

// BenchmarkRetention fills a namespace with -retention.runs ended runs,
// each with a sealed transcript of -retention.chain-kib KiB in real
// segments, one decision and a 1 s TTL, under an Agent whose archive sink
// counts what it receives; then starts a manager and times until every
// run, segment and decision is gone. The figure is the deletion rate (runs
// archived and deleted per second) as a ratio of the same apiserver's
// concurrent ceiling of plain 2 KiB status writes, measured first.
func BenchmarkRetention(b *testing.B) {
	ctx := context.Background()
	h := benchNamespace(b, "bench-ret")
	u := measureCAS(b, h.ns)

	var archived atomic.Int64
	var ids sync.Map
	sinkSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // count, never keep: 10,000 records are gigabytes
		if _, dup := ids.LoadOrStore(r.Header.Get("webhook-id"), true); !dup {
			archived.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(sinkSrv.Close)
	h.createAgent("keeper", exagentv1.AgentSpec{
		Model:     fixture.Scripted(fixture.TextTurn("done")),
		Retention: exagentv1.RetentionSpec{Archive: &exagentv1.NotifySink{Name: "audit", URL: sinkSrv.URL}},
	})

	n := *retentionRuns
	t0 := time.Now()
	var made atomic.Int64
	var sealedBytes atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	segs := store.NewSegments(env().Client, env().Client, 1)
	for range max(*retentionMakers, 1) {
		wg.Go(func() {
			for i := range work {
				sealedBytes.Add(makeEndedRun(b, h, segs, i, *retentionChain<<10))
				made.Add(1)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	fill := time.Since(t0)

	b.ResetTimer()
	start := time.Now()
	mgr := h.startManagerNoCleanup(controllers.Options{RetentionWorkers: 8})
	defer mgr.stop()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Hour, true, func(context.Context) (bool, error) {
		left, err := remaining(ctx, h)
		return err == nil && left == 0, nil
	})
	gone := time.Since(start)
	b.StopTimer()
	if err != nil {
		left, _ := remaining(ctx, h)
		b.Fatalf("%d objects left after %s", left, gone)
	}
	if got := archived.Load(); got != int64(n) {
		b.Errorf("the archive sink received %d distinct archives, want %d", got, n)
	}
	rate := float64(n) / gone.Seconds()
	b.ReportMetric(float64(n), "runs")
	b.ReportMetric(float64(sealedBytes.Load())/(1<<20), "sealed-MiB")
	b.ReportMetric(fill.Seconds(), "fill-s")
	b.ReportMetric(gone.Seconds(), "all-gone-s")
	b.ReportMetric(rate, "runs-deleted/s")
	b.ReportMetric(float64(archived.Load()), "archived")
	b.ReportMetric(u.ceiling, "cas-ceiling-w/s")
	b.ReportMetric(rate/u.ceiling, "deletion-rate/ceiling")
	b.ReportMetric(float64(sealedBytes.Load())/(1<<20)/gone.Seconds(), "sealed-MiB-deleted/s")
}

// makeEndedRun creates one Succeeded run of Agent keeper whose transcript
// of about size bytes is sealed into real segments, with a 1 s TTL and one
// decision naming it; it returns the sealed bytes.
func makeEndedRun(b *testing.B, h *harness, segs *store.Segments, i, size int) int64 {
	ctx := context.Background()
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("done-%d", i), Namespace: h.ns},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "keeper"}, Input: "read it all",
			TTLSecondsAfterFinished: ptr.To[int32](1)}}
	must(b, h.c.Create(ctx, run))
	st := finishedStatus(i, size)
	sealed, chain, err := loop.Seal(st, loop.SealConfig{RunName: run.Name, RunUID: string(run.UID)})
	must(b, err)
	must(b, segs.Create(ctx, run, chain))
	run.Status = sealed
	must(b, h.c.Status().Update(ctx, run))
	must(b, h.c.Create(ctx, &exagentv1.ApprovalDecision{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("late-%d", i), Namespace: h.ns},
		Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: run.Name}, ApprovalID: "a-1",
			Decision: exagentv1.DecisionApprove, Revision: 1, PayloadHash: "sha256:late", Reason: "after the end"},
	}))
	return sealed.Transcript.SegmentBytes
}

// remaining counts the runs, segments and decisions left in the namespace.
func remaining(ctx context.Context, h *harness) (int, error) {
	n := 0
	for _, kind := range []string{"AgentRunList", "AgentRunSegmentList", "ApprovalDecisionList"} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind(kind))
		if err := h.c.List(ctx, list, client.InNamespace(h.ns), client.Limit(1)); err != nil {
			return 0, err
		}
		n += len(list.Items)
		if rest := list.RemainingItemCount; rest != nil {
			n += int(*rest)
		}
	}
	return n, nil
}
