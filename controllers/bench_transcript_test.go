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
	"flag"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

var (
	benchTurns         = flag.Int("bench.turns", 200, "BenchmarkTranscriptWriteCost: turns of the long run")
	benchResultKiB     = flag.Int("bench.result-kib", 32, "BenchmarkTranscriptWriteCost: KiB of each tool result")
	benchFinished      = flag.Int("bench.finished", 1000, "BenchmarkFinishedRunsMemory: finished runs in the namespace")
	benchFinishedBytes = flag.Int("bench.finished-kib", 256, "BenchmarkFinishedRunsMemory: KiB of sealed transcript per finished run")
)

// BenchmarkTranscriptWriteCost runs one agent of -bench.turns turns whose
// tool returns -bench.result-kib KiB each, records the status as stored at
// steps 1, 50 and the last, and measures, on the same apiserver in the same
// run, what one CAS status write of each costs (p50 of sequential writes):
// with the transcript sealed into segments the cost must stay flat
// (ratio last/step1 ≤ 1.5). It reports the segment bytes written per
// transcript byte (≤ 1.1: nothing written twice).
func BenchmarkTranscriptWriteCost(b *testing.B) {
	ctx := context.Background()
	turns, size := *benchTurns, *benchResultKiB<<10
	h := &harness{t: b, ns: fmt.Sprintf("bench-tw-%d", time.Now().UnixNano()%1000000), c: env().Client}
	must(b, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	ps := newPagesServer(b, size)
	rm := newReaderModel(b, turns, size)
	mgr := h.startManagerNoCleanup(controllers.Options{})
	stopped := false
	defer func() {
		if !stopped {
			mgr.stop()
		}
	}()
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL, func(a *exagentv1.AgentSpec) {
		a.Limits.MaxSteps = ptrTo(int32(turns + 5))
		a.Limits.MaxTranscriptBytes = ptrTo(exagentv1.MaxTranscriptBytesLimit) // -bench.turns may ask for long runs
	})

	wc, err := client.NewWithWatch(env().Config, client.Options{Scheme: env().Scheme})
	must(b, err)
	w, err := wc.Watch(ctx, &exagentv1.AgentRunList{}, client.InNamespace(h.ns))
	must(b, err)
	defer w.Stop()
	at := map[int32]exagentv1.AgentRunStatus{}
	steps := []int32{1, 50, int32(turns)}
	var mu sync.Mutex
	largest, writes := 0, 0
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			run := ev.Object.(*exagentv1.AgentRun)
			bs, _ := json.Marshal(run.Status)
			mu.Lock()
			writes++
			largest = max(largest, len(bs))
			for _, s := range steps {
				// The largest write of the step: its batch with the result in it.
				if run.Status.Cursor.Step == s && run.Status.Phase == exagentv1.PhaseRunning {
					if old, ok := at[s]; !ok || jsonLen(old) < len(bs) {
						at[s] = *run.Status.DeepCopy()
					}
				}
			}
			mu.Unlock()
			if run.Status.Phase.IsTerminal() {
				return
			}
		}
	}()
	b.ResetTimer()
	start := time.Now()
	h.createRun("long", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRunFor("long", "ended", 20*time.Minute, func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	wall := time.Since(start)
	b.StopTimer()
	<-watched
	mgr.stop() // the scratch runs below are written by this benchmark alone
	stopped = true
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		b.Fatalf("run %s: %s", run.Status.Phase, run.Status.Message)
	}
	msgs, _ := transcriptOf(&testing.T{}, run)
	transcript := transcriptSize(msgs)
	raw := casCost(b, h, rawStatus(), 40)
	b.ReportMetric(raw.Seconds()*1000, "raw-cas-ms")
	var first time.Duration
	for _, s := range steps {
		st, ok := at[s]
		if !ok {
			b.Fatalf("no status seen at step %d", s)
		}
		d := casCost(b, h, st, 40)
		if s == 1 {
			first = d
		}
		name := fmt.Sprintf("step%d", s)
		if s == int32(turns) {
			name = "stepLast"
		}
		b.ReportMetric(d.Seconds()*1000, name+"-ms")
		b.ReportMetric(float64(jsonLen(st)), name+"-bytes")
		if s == int32(turns) {
			b.ReportMetric(float64(d)/float64(first), "last/step1")
		}
	}
	b.ReportMetric(float64(run.Status.Transcript.SegmentBytes)/float64(transcript), "segment-bytes/transcript-byte")
	b.ReportMetric(float64(transcript)/(1<<20), "transcript-MiB")
	b.ReportMetric(float64(largest), "largest-status-bytes")
	b.ReportMetric(float64(writes), "status-writes")
	b.ReportMetric(wall.Seconds(), "wall-s")
}

// casCost is the p50 of n sequential CAS status writes of st on a scratch
// run of the same apiserver.
func casCost(b *testing.B, h *harness, st exagentv1.AgentRunStatus, n int) time.Duration {
	ctx := context.Background()
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{GenerateName: "cas-", Namespace: h.ns},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "none"}, Input: "scratch"}}
	must(b, h.c.Create(ctx, run))
	defer func() { _ = h.c.Delete(ctx, run) }()
	var d []time.Duration
	for i := range n {
		st.ObservedGeneration = int64(i % 2) // every write changes the object
		run.Status = *st.DeepCopy()
		t0 := time.Now()
		must(b, h.c.Status().Update(ctx, run))
		d = append(d, time.Since(t0))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// rawStatus is a ~2 KiB status: the unit of docs/architecture.md §8.
func rawStatus() exagentv1.AgentRunStatus {
	return exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Message: strings.Repeat("x", 1900),
		Cursor: exagentv1.Cursor{Stage: exagentv1.StageRequest}}
}

func jsonLen(v any) int {
	bs, _ := json.Marshal(v)
	return len(bs)
}

// BenchmarkFinishedRunsMemory fills a namespace with -bench.finished
// Succeeded runs, each with a sealed transcript of -bench.finished-kib KiB
// in real segments, starts a manager and reports the heap it holds once its
// cache has synced: the manager never watches segments and keeps only the
// stripped status of ended runs, so the figure does not grow with the
// transcripts.
func BenchmarkFinishedRunsMemory(b *testing.B) {
	ctx := context.Background()
	h := &harness{t: b, ns: fmt.Sprintf("bench-mem-%d", time.Now().UnixNano()%1000000), c: env().Client}
	must(b, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	segs := store.NewSegments(env().Client, env().Client, 1)
	var sealedBytes int64
	for i := range *benchFinished {
		run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("done-%d", i), Namespace: h.ns},
			Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "gone"}, Input: "read it all"}}
		must(b, h.c.Create(ctx, run))
		st := finishedStatus(i, *benchFinishedBytes<<10)
		sealed, chain, err := loop.Seal(st, loop.SealConfig{RunName: run.Name, RunUID: string(run.UID)})
		must(b, err)
		must(b, segs.Create(ctx, run, chain))
		run.Status = sealed
		must(b, h.c.Status().Update(ctx, run))
		sealedBytes += sealed.Transcript.SegmentBytes
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	mgr := h.startManagerNoCleanup(controllers.Options{})
	defer mgr.stop()
	var list exagentv1.AgentRunList
	if !eventually(func() bool {
		return mgr.ctrls.Runs.Client.List(ctx, &list, client.InNamespace(h.ns)) == nil && len(list.Items) == *benchFinished
	}) {
		b.Fatalf("the cache holds %d runs", len(list.Items))
	}
	list = exagentv1.AgentRunList{}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.StopTimer()
	heap := float64(after.HeapInuse) - float64(before.HeapInuse)
	b.ReportMetric(heap/(1<<20), "manager-heap-MiB")
	b.ReportMetric(heap/float64(*benchFinished)/1024, "heap-KiB/run")
	b.ReportMetric(float64(sealedBytes)/(1<<20), "sealed-MiB")
}

// finishedStatus is the stored shape of a Succeeded run whose tool results
// total about size bytes.
func finishedStatus(i, size int) exagentv1.AgentRunStatus {
	st := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded, Reason: exagentv1.ReasonSucceeded,
		Cursor:  exagentv1.Cursor{Step: 1, Stage: exagentv1.StageFinish},
		Binding: &exagentv1.Binding{Definition: "sha256:d", Model: "sha256:m", Policy: "sha256:p"},
		History: []exagentv1.Message{{Role: exagentv1.RoleSystem, Content: "Read."}, {Role: exagentv1.RoleUser, Content: "read it all"}},
		Output:  "done"}
	for k := 0; k*(60<<10) < size; k++ {
		id := fmt.Sprintf("c%d", k)
		st.History = append(st.History,
			exagentv1.Message{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: id, Name: "read", Arguments: `{}`}}},
			exagentv1.Message{Role: exagentv1.RoleTool, ToolCallID: id, Content: page(i*1000+k, 60<<10)})
	}
	st.History = append(st.History, exagentv1.Message{Role: exagentv1.RoleAssistant, Content: "done"})
	return st
}
