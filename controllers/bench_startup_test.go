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
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

var startupRuns = flag.Int("startup.runs", 10000, "BenchmarkManagerStartup: ended runs, one segment each, in the cluster at the start")

// BenchmarkManagerStartup: a manager started on a cluster holding
// -startup.runs ended runs, each with one segment. Start-up is done once
// every run has been reconciled, the run queue is empty and the manager
// has sent no request about segments for a second. It reports the time to
// that point and the requests the manager sent meanwhile — segments
// (GET, which counts lists) apart: a manager that sweeps for the segments
// of runs deleted while it was down lists every segment's metadata at each
// start; one that leaves that to the garbage collector lists none.
func BenchmarkManagerStartup(b *testing.B) {
	n := *startupRuns
	h := benchNamespace(b, "startup")
	t0 := time.Now()
	endedRunsWithSegments(b, h, n)
	b.Logf("created %d ended runs with a segment each in %s", n, time.Since(t0).Round(time.Millisecond))

	reconciled0 := reconcileTotal(b, "agentrun")
	b.ResetTimer()
	start := time.Now()
	m := h.startBenchManager(benchOptions(), nil)
	defer m.stop()
	// Settled: every run reconciled with the queue empty (reconciledAt,
	// first seen), and no request about segments for a second since the
	// last one (segmentsAt).
	lastSegments, segmentsAt, reconciledAt := 0, start, time.Time{}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Minute, true, func(context.Context) (bool, error) {
		now := time.Now()
		if s := benchRequests.count("GET agentrunsegments"); s != lastSegments {
			lastSegments, segmentsAt = s, now
		}
		if reconciledAt.IsZero() && reconcileTotal(b, "agentrun")-reconciled0 >= float64(n) && queueDepth(b, "agentrun") == 0 {
			reconciledAt = now
		}
		return !reconciledAt.IsZero() && now.Sub(segmentsAt) >= time.Second, nil
	})
	elapsed := reconciledAt.Sub(start)
	if segmentsAt.After(reconciledAt) {
		elapsed = segmentsAt.Sub(start)
	}
	b.StopTimer()
	if err != nil {
		b.Fatalf("the manager did not settle: %v (%s)", err, benchRequests)
	}
	b.ReportMetric(elapsed.Seconds(), "startup-s")
	b.ReportMetric(float64(benchRequests.count("GET agentrunsegments")), "segment-reads")
	b.ReportMetric(float64(benchRequests.count("GET agentruns")), "run-reads")
	b.ReportMetric(0, "ns/op")
	b.Logf("start-up on %d ended runs with a segment each: settled in %s; requests: %s",
		n, elapsed.Round(time.Millisecond), benchRequests)
}

// endedRunsWithSegments creates n Succeeded runs of h's namespace, each
// with one segment its transcript references, as the manager would have
// left them.
func endedRunsWithSegments(b *testing.B, h *harness, n int) {
	b.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := endedRunWithSegment(h, fmt.Sprintf("ended-%05d", i)); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

func endedRunWithSegment(h *harness, name string) error {
	ctx := context.Background()
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "a"}, Input: "go"}}
	if err := h.c.Create(ctx, run); err != nil {
		return fmt.Errorf("creating run %s: %w", name, err)
	}
	seg := &exagentv1.AgentRunSegment{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-s1", Namespace: h.ns,
			Labels: map[string]string{exagentv1.LabelRun: exagentv1.LabelValue(name), exagentv1.LabelRunUID: string(run.UID)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentRun",
				Name: name, UID: run.UID, Controller: ptr.To(true)}},
		},
		Spec: exagentv1.AgentRunSegmentSpec{RunName: name, RunUID: string(run.UID)},
	}
	if err := h.c.Create(ctx, seg); err != nil {
		return fmt.Errorf("creating segment of run %s: %w", name, err)
	}
	run.Status.Phase = exagentv1.PhaseSucceeded
	run.Status.Transcript = &exagentv1.TranscriptHead{Head: seg.Name, Segments: 1}
	if err := h.c.Status().Update(ctx, run); err != nil {
		return fmt.Errorf("ending run %s: %w", name, err)
	}
	return nil
}

// reconcileTotal is controller-runtime's reconcile count of controller
// (all results), from this process's registry.
func reconcileTotal(b *testing.B, controller string) float64 {
	return metricSum(b, "controller_runtime_reconcile_total", "controller", controller)
}

// queueDepth is the depth of controller's work queue.
func queueDepth(b *testing.B, controller string) float64 {
	return metricSum(b, "workqueue_depth", "name", controller)
}

func metricSum(b *testing.B, family, label, value string) float64 {
	b.Helper()
	mfs, err := metrics.Registry.Gather()
	must(b, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && strings.EqualFold(l.GetValue(), value) {
					sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return sum
}

// count is how many requests of key ("GET agentrunsegments") were counted.
func (rc *requestCounter) count(key string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n[key]
}
