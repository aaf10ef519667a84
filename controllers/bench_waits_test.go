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
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/certs"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/loop"
)

var (
	waitsRuns    = flag.Int("waits.runs", 10000, "BenchmarkWaitsOnTheWorld: runs left waiting, a third each on timers, on objects and on callbacks")
	waitsObjects = flag.Int("waits.objects", 100, "BenchmarkWaitsOnTheWorld: ConfigMaps the object waits are spread over")
)

// BenchmarkWaitsOnTheWorld (issue 41) leaves -waits.runs runs waiting at
// once in the manager process (as BenchmarkFastWaitingRunsProcess leaves
// runs waiting for a person): a third Sleep 24h, a third WaitFor one of
// -waits.objects ConfigMaps (as a ServiceAccount that may read them), a
// third WaitForCallback on a URL of their own. It reports the manager's
// RSS per waiting run (target: no more than a run waiting for a person,
// ≈ 9–10 KiB) and its goroutines (no goroutine per waiting run), then
// flips the condition of one ConfigMap and reports the time from that
// write to each of its waiting runs' next model request (the commit that
// wakes, claims and sends it: the run leaves Waiting), in CAS round trips
// of the same apiserver (target: within 2).
func BenchmarkWaitsOnTheWorld(b *testing.B) {
	n, objects := *waitsRuns, *waitsObjects
	h := benchNamespace(b, "waits")
	u := measureCAS(b, h.ns)
	h.readerSA()
	ctx := context.Background()
	for i := range objects {
		must(b, h.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: objectName(i), Namespace: h.ns},
			Data: map[string]string{"ready": "no"}}))
	}
	createWaitAgents(b, h, objects)

	// The callback URLs need the trigger listener (TLS) and a signing key.
	certDir := b.TempDir()
	_, err := certs.GenerateServing(certDir, []string{"127.0.0.1"})
	must(b, err)
	port, err := procs.FreePort()
	must(b, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := startManagerProcess(b, "--trigger-bind-address", addr, "--trigger-cert-dir", certDir,
		"--callback-base-url", "https://"+addr, "--decision-signing-secret", h.ns+"/bench-signing",
		"--max-waiting-runs-per-namespace=0")
	idle := p.waitQuiet(b, 3*time.Second, 5*time.Minute)
	mem0 := p.memory(b)
	gor0 := gauge(idle, "go_goroutines")

	b.ResetTimer()
	t0 := time.Now()
	createWaitRuns(b, h, n, objects)
	p.waitRuns(b, h.ns, exagentv1.PhaseWaiting, n, 2*time.Second, 30*time.Minute)
	elapsed := time.Since(t0)
	b.StopTimer()

	mf := p.waitQuiet(b, 3*time.Second, 5*time.Minute)
	mem := p.memory(b)
	gor := gauge(mf, "go_goroutines")
	kinds := map[string]float64{}
	for _, m := range mf["exagent_waiting_calls"].GetMetric() {
		if label(m, "namespace") == h.ns {
			kinds[label(m, "kind")] = m.GetGauge().GetValue()
		}
	}
	p.heapProfile(b)

	// One object's condition flips: its runs wake.
	first, lat := flipAndWatch(b, h, objectName(0))

	u.report(b)
	delta := mem.RSS - min(mem.RSS, mem0.RSS)
	b.ReportMetric(float64(mem.RSS)/mib, "rss-MiB")
	b.ReportMetric(float64(delta)/float64(n)/1024, "rss-KiB/run")
	b.ReportMetric(gor, "goroutines")
	b.ReportMetric(gor-gor0, "goroutines-added")
	b.ReportMetric(elapsed.Seconds(), "to-waiting-s")
	p50, worst := percentiles(lat)
	b.ReportMetric(u.ratio(first), "first-wake-rt")
	b.ReportMetric(u.ratio(p50), "wake-p50-rt")
	b.ReportMetric(u.ratio(worst), "wake-max-rt")
	b.Logf("%d runs waiting (Timer %.0f, Object %.0f, Callback %.0f) in %s: RSS %.1f MiB (idle %.1f, +%.1f MiB = %.2f KiB/run), %.0f goroutines (idle %.0f)",
		n, kinds["Timer"], kinds["Object"], kinds["Callback"], elapsed.Round(time.Millisecond), float64(mem.RSS)/mib, float64(mem0.RSS)/mib,
		float64(delta)/mib, float64(delta)/float64(n)/1024, gor, gor0)
	b.Logf("ConfigMap %s flipped: %d runs woke; the first next model request %s after the write (%.2f CAS round trips of %s), p50 %s (%.2f), last %s (%.2f)",
		objectName(0), len(lat), first.Round(time.Microsecond), u.ratio(first), u.rt, p50.Round(time.Microsecond), u.ratio(p50),
		worst.Round(time.Microsecond), u.ratio(worst))
	b.ReportMetric(0, "ns/op")
}

func objectName(i int) string { return fmt.Sprintf("obj-%03d", i) }

// createWaitAgents makes the Agents of the benchmark: sleeper (Sleep 24h),
// callbacker (NewCallback, then WaitForCallback on it), and one watcher
// per object (a scripted model's arguments are fixed, so an Agent per
// object), each answering "done" once its wait ends.
func createWaitAgents(b *testing.B, h *harness, objects int) {
	allow := exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}
	h.createAgent("sleeper", *fixture.MakeAgent("sleeper", "").
		Script(fixture.CallTurn("nap", "nap", map[string]any{"duration": "24h"}), fixture.TextTurn("done")).
		SleepTool("nap").Policy(allow).Spec())
	h.createAgent("callbacker", *fixture.MakeAgent("callbacker", "").
		Script(fixture.CallTurn("mk", "mk", map[string]any{}),
			fixture.CallTurn("w", "wait", map[string]any{"callback": loop.CallbackID("mk")}), fixture.TextTurn("done")).
		NewCallbackTool("mk").WaitForCallbackTool("wait").Policy(allow).Spec())
	for i := range objects {
		h.createAgent("watcher-"+objectName(i), *fixture.MakeAgent("w", "").
			Script(fixture.CallTurn("w1", "waitfor", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": objectName(i),
				"condition": `self.data.ready == "yes"`}), fixture.TextTurn("done")).
			WaitForTool("waitfor", "ConfigMap").Policy(allow).Spec())
	}
}

// createWaitRuns creates n runs, 16 at once: run i is a sleeper, a
// watcher of object (i/3)%objects or a callbacker, in turn.
func createWaitRuns(b *testing.B, h *harness, n, objects int) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				spec := exagentv1.AgentRunSpec{Input: "go"}
				switch i % 3 {
				case 0:
					spec.AgentRef.Name = "sleeper"
				case 1:
					spec.AgentRef.Name, spec.ServiceAccountName = "watcher-"+objectName((i/3)%objects), "reader"
				default:
					spec.AgentRef.Name = "callbacker"
				}
				r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%05d", i), Namespace: h.ns}, Spec: spec}
				if err := h.c.Create(context.Background(), r); err != nil {
					b.Errorf("creating run %s: %v", r.Name, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// flipAndWatch sets ConfigMap name's ready to "yes" and answers how long
// after that write each of the runs waiting on it left Waiting (the
// commit that woke it, claimed it and sent its next model request), and
// the first of them.
func flipAndWatch(b *testing.B, h *harness, name string) (first time.Duration, lat []time.Duration) {
	b.Helper()
	ctx := context.Background()
	var runs exagentv1.AgentRunList
	must(b, h.c.List(ctx, &runs, client.InNamespace(h.ns)))
	waiting := map[string]bool{}
	for i := range runs.Items {
		r := &runs.Items[i]
		if r.Spec.AgentRef.Name == "watcher-"+name && r.Status.Phase == exagentv1.PhaseWaiting {
			waiting[r.Name] = true
		}
	}
	wc, err := client.NewWithWatch(env().Config, client.Options{Scheme: env().Scheme})
	must(b, err)
	w, err := wc.Watch(ctx, &exagentv1.AgentRunList{}, client.InNamespace(h.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: runs.ResourceVersion}})
	must(b, err)
	defer w.Stop()

	cm := &corev1.ConfigMap{}
	must(b, h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: name}, cm))
	cm.Data["ready"] = "yes"
	must(b, h.c.Update(ctx, cm))
	flipped := time.Now()
	deadline := time.After(5 * time.Minute)
	for len(waiting) > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("the watch of runs ended with %d runs still waiting on %s", len(waiting), name)
			}
			r, isRun := ev.Object.(*exagentv1.AgentRun)
			if !isRun || ev.Type != watch.Modified || !waiting[r.Name] || r.Status.Phase == exagentv1.PhaseWaiting {
				continue
			}
			d := time.Since(flipped)
			if len(lat) == 0 {
				first = d
			}
			lat = append(lat, d)
			delete(waiting, r.Name)
		case <-deadline:
			b.Fatalf("%d runs still wait on %s 5 minutes after it met their condition", len(waiting), name)
		}
	}
	return first, lat
}
