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
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/triggers"
)

// The trigger burst benchmark (issue 40, make bench).
var (
	triggerEvents  = flag.Int("trigger.events", 10000, "BenchmarkTriggerBurst: events sent, one delivery each")
	triggerKeys    = flag.Int("trigger.keys", 100, "BenchmarkTriggerBurst: dedup keys the events fall on (the runs it makes)")
	triggerSenders = flag.Int("trigger.senders", casWriters, "BenchmarkTriggerBurst: concurrent senders (by default as many as measure the write ceiling, so the runs' creation rate compares with it)")
)

// triggerBurstToken is the bench trigger's bearer token.
const triggerBurstToken = "burst-token"

// runClock is a triggers.Recorder that notes when the runs were made: the
// handler tells it each delivery's outcomes once that delivery's runs are
// created (synchronously, before the answer).
type runClock struct {
	mu      sync.Mutex
	runs    int
	dups    int
	lastRun time.Time
}

func (rc *runClock) Record(_ types.NamespacedName, counts map[triggers.Outcome]int, _ string, _ time.Time) {
	now := time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.dups += counts[triggers.OutcomeDuplicate]
	if n := counts[triggers.OutcomeRun]; n > 0 {
		rc.runs += n
		rc.lastRun = now
	}
}

// burstEvents are n event bodies over keys keys, round-robin then
// shuffled: {"key":"k-007","seq":1234}.
func burstEvents(n, keys int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i], _ = json.Marshal(map[string]any{"key": fmt.Sprintf("k-%03d", i%keys), "seq": i})
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// burstResult is what one burst's senders saw.
type burstResult struct {
	codes      map[int]int
	dur        time.Duration // the first send to the last answer
	lastAnswer time.Time
	cpu        float64 // CPU seconds of this process over the burst
	errs       []error
}

// sendBurst posts every body to url from senders concurrent senders, each
// on its own kept-alive connection, and times the burst from the first
// send to the last answer.
func sendBurst(b *testing.B, url string, bodies [][]byte, senders int) burstResult {
	b.Helper()
	tr := &http.Transport{MaxIdleConns: senders, MaxIdleConnsPerHost: senders, MaxConnsPerHost: senders}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	var next atomic.Int64
	var mu sync.Mutex
	res := burstResult{codes: map[int]int{}}
	var wg sync.WaitGroup
	self := os.Getpid()
	cpu0, t0 := cpuSeconds(b, self), time.Now()
	for range senders {
		wg.Go(func() {
			codes := map[int]int{}
			var last time.Time
			var errs []error
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					break
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(bodies[i]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+triggerBurstToken)
				resp, err := hc.Do(req)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK && len(errs) < 5 {
					msg, _ := io.ReadAll(resp.Body)
					errs = append(errs, fmt.Errorf("event %d: %d %s", i, resp.StatusCode, strings.TrimSpace(string(msg))))
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				codes[resp.StatusCode]++
				last = time.Now()
			}
			mu.Lock()
			defer mu.Unlock()
			for c, n := range codes {
				res.codes[c] += n
			}
			if last.After(res.lastAnswer) {
				res.lastAnswer = last
			}
			res.errs = append(res.errs, errs...)
		})
	}
	wg.Wait()
	res.cpu = cpuSeconds(b, self) - cpu0
	res.dur = res.lastAnswer.Sub(t0)
	return res
}

// secretMemo is an API reader that reads each Secret once and then
// answers from memory: the listener with its Secret cached (what the
// benchmark compares with, not how the manager reads Secrets).
type secretMemo struct {
	client.Reader
	mu   sync.Mutex
	seen map[client.ObjectKey]*corev1.Secret
}

func (sm *secretMemo) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return sm.Reader.Get(ctx, key, obj, opts...)
	}
	sm.mu.Lock()
	got, ok := sm.seen[key]
	sm.mu.Unlock()
	if ok {
		got.DeepCopyInto(s)
		return nil
	}
	if err := sm.Reader.Get(ctx, key, s, opts...); err != nil {
		return err
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.seen == nil {
		sm.seen = map[client.ObjectKey]*corev1.Secret{}
	}
	sm.seen[key] = s.DeepCopy()
	return nil
}

// triggerBurst is one burst's figures.
type triggerBurst struct {
	res                        burstResult
	clock                      *runClock
	listed                     int
	listedAfter                time.Duration
	firstList                  bool
	apiCPU, etcdCPU            float64
	mgrWrites, mgrReqs         int
	creates, secretGets        int
	counted, apiserverPerEvent string
}

// burstTrigger creates AgentTrigger name (bearer token in Secret "burst", the
// dedup key event.key, a dedup window of an hour: the burst is one
// window; its runs' Agent does not exist), serves a listener over the
// manager's cached client and reader (through wrap, when given), sends it
// bodies, and checks every event was answered 201 or 200 and exactly one
// run was made per key.
func burstTrigger(b *testing.B, h *harness, m *manager, name string, wrap func(client.Reader) client.Reader,
	bodies [][]byte, nKeys, senders int, api, etcd int, timed bool) triggerBurst {
	ctx := context.Background()
	at := &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
		Source: &exagentv1.TriggerSource{Webhook: &exagentv1.WebhookTriggerSource{Auth: &exagentv1.TriggerAuth{
			BearerTokenSecretRef: &exagentv1.SecretKeySelector{Name: "burst", Key: "token"}}}},
		// No such Agent: the runs are created, never executed.
		RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "absent"}, Input: "Look at this:"},
		Input:       `"event " + event.key + " #" + string(event.seq)`,
		DedupKey:    "event.key",
		DedupWindow: &metav1.Duration{Duration: time.Hour},
	}}
	setBy(at, "dave")
	must(b, h.c.Create(ctx, at))
	// The manager has read the trigger (its Ready condition).
	h.waitTriggerReady(name, exagentv1.ReasonTriggerReady)
	reader := m.ctrls.TriggerRuns.APIReader
	if wrap != nil {
		reader = wrap(reader)
	}
	runs := &controllers.TriggerRuns{Client: m.ctrls.TriggerRuns.Client, APIReader: reader}
	out := triggerBurst{clock: &runClock{}}
	listener := httptest.NewServer(&triggers.Handler{Lookup: runs, Creator: runs, Recorder: out.clock})
	defer listener.Close()
	// Warm: the cache's AgentTrigger informer synced, the trigger compiled
	// (no event sent: no run made).
	if _, err := runs.Trigger(ctx, types.NamespacedName{Namespace: h.ns, Name: name}); err != nil {
		b.Fatalf("the listener cannot read trigger %s: %v", name, err)
	}

	benchRequests.reset()
	r0 := apiserverRequests(b)
	api0, etcd0 := cpuSeconds(b, api), cpuSeconds(b, etcd)
	if timed {
		b.StartTimer()
	}
	out.res = sendBurst(b, listener.URL+"/triggers/"+h.ns+"/"+name, bodies, senders)
	if timed {
		b.StopTimer()
	}
	// The runs exist when the last answer is in: listed at once (the
	// wait is a deadline, not a pace).
	polls := 0
	var listed []exagentv1.AgentRun
	if !eventually(func() bool {
		polls++
		list := &exagentv1.AgentRunList{}
		if err := h.c.List(ctx, list, client.InNamespace(h.ns), client.MatchingLabels{exagentv1.LabelTrigger: name}); err != nil {
			return false
		}
		listed = list.Items
		return len(listed) >= nKeys
	}) {
		b.Fatalf("trigger %s: %d runs listed %s after the burst, want %d", name, len(listed), waitTimeout, nKeys)
	}
	out.listedAfter, out.firstList, out.listed = time.Since(out.res.lastAnswer), polls == 1, len(listed)
	out.apiCPU, out.etcdCPU = cpuSeconds(b, api)-api0, cpuSeconds(b, etcd)-etcd0
	out.mgrWrites, out.mgrReqs, out.counted = benchRequests.writes(), benchRequests.total(), benchRequests.String()
	out.creates, out.secretGets = benchRequests.get("POST agentruns"), benchRequests.get("GET secrets")
	out.apiserverPerEvent = requestsSince(b, r0, len(bodies))

	// Correctness: every event answered 201 or 200, one run per key.
	res := out.res
	if len(res.errs) > 0 {
		b.Fatalf("trigger %s: %d events failed, e.g. %v (answers %v)", name, len(res.errs), res.errs[0], res.codes)
	}
	if res.codes[http.StatusCreated]+res.codes[http.StatusOK] != len(bodies) {
		b.Fatalf("trigger %s: answers %v, want %d events answered 201 or 200", name, res.codes, len(bodies))
	}
	if len(listed) != nKeys || res.codes[http.StatusCreated] != nKeys || out.clock.runs != nKeys {
		b.Fatalf("trigger %s: %d runs listed, %d answers 201, %d runs recorded: want %d (one per key)",
			name, len(listed), res.codes[http.StatusCreated], out.clock.runs, nKeys)
	}
	keys := map[string]bool{}
	for _, r := range listed {
		i := strings.LastIndex(r.Spec.Input, "event k-")
		if i < 0 {
			b.Fatalf("run %s input %q names no key", r.Name, r.Spec.Input)
		}
		keys[strings.Fields(r.Spec.Input[i+len("event "):])[0]] = true
	}
	if len(keys) != nKeys {
		b.Fatalf("trigger %s: the %d runs name %d distinct keys, want %d", name, len(listed), len(keys), nKeys)
	}
	return out
}

// BenchmarkTriggerBurst sends a burst of -trigger.events webhook events
// over -trigger.keys dedup keys (round-robin, shuffled) from
// -trigger.senders concurrent senders, over real HTTP, to a trigger
// listener (triggers.Handler over controllers.TriggerRuns, with bearer
// token auth and a dedup window of an hour, so the burst is one window),
// and checks it made exactly one run per key and answered every event 201
// or 200.
//
// A manager runs beside it, configured as cmd/manager is, and the
// listener uses that manager's cached client and API reader, as the
// listener in cmd/manager does: every request they send is counted. The
// runs' Agent does not exist, so the run controller only marks each run
// Pending (AgentNotFound) — runs that executed would muddy the CPU figure.
//
// It reports the burst's duration, events/s and runs/s; the runs created
// per second as a ratio to the same apiserver's concurrent CAS write
// ceiling, measured first (issue 40's target: ≥ 0.7); the time from the
// last event's answer to the last run's creation (the runs are created
// inside the deliveries, so it is 0 by construction, and a listing right
// after the burst confirms it); the manager's writes and requests per
// event (the dedup is in memory: writes/event ≈ keys/events); and the CPU
// per event of this process — the listener, the manager and the senders
// together, nothing subtracted — and of the envtest's kube-apiserver and
// etcd, separate processes. The CPU the senders and a bare HTTP server
// take for the same burst, measured first against a handler that only
// answers, is reported apart. Then the same burst goes to a second
// trigger whose listener reads its Secret once and keeps it (secretMemo):
// what the listener's Secret read per delivery costs. Timings are
// reported, never asserted.
func BenchmarkTriggerBurst(b *testing.B) {
	nEvents, nKeys, senders := *triggerEvents, *triggerKeys, *triggerSenders
	if nEvents < nKeys || nKeys < 1 || senders < 1 {
		b.Fatalf("-trigger.events=%d -trigger.keys=%d -trigger.senders=%d: want events ≥ keys ≥ 1 and senders ≥ 1", nEvents, nKeys, senders)
	}
	ctx := context.Background()
	h := benchNamespace(b, "trigger-burst")
	u := measureCAS(b, h.ns)
	api, etcd := controlPlanePIDs(b)
	must(b, h.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: h.ns},
		StringData: map[string]string{"token": triggerBurstToken}}))
	m := h.startBenchManager(benchOptions(), nil)
	defer m.stop()

	bodies := burstEvents(nEvents, nKeys)
	// The senders' and a bare HTTP server's share of the CPU: the same
	// burst to a handler that only answers.
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"duplicates":1}`))
	}))
	base := sendBurst(b, bare.URL+"/triggers/"+h.ns+"/burst", bodies, senders)
	bare.Close()

	b.ResetTimer()
	b.StopTimer()
	tb := burstTrigger(b, h, m, "burst", nil, bodies, nKeys, senders, api, etcd, true)
	memo := burstTrigger(b, h, m, "burst-memo", func(r client.Reader) client.Reader { return &secretMemo{Reader: r} },
		bodies, nKeys, senders, api, etcd, false)

	res := tb.res
	perMs := func(v float64) float64 { return v / float64(nEvents) * 1000 }
	t0 := res.lastAnswer.Add(-res.dur)
	lastRunToLastEvent := tb.clock.lastRun.Sub(res.lastAnswer) // ≤ 0: the runs are made inside the deliveries
	eventsPerS := float64(nEvents) / res.dur.Seconds()
	runsPerS := float64(nKeys) / res.dur.Seconds()
	memoEventsPerS := float64(nEvents) / memo.res.dur.Seconds()
	memoRunsPerS := float64(nKeys) / memo.res.dur.Seconds()
	u.report(b)
	b.ReportMetric(res.dur.Seconds()*1000, "burst-ms")
	b.ReportMetric(eventsPerS, "events/s")
	b.ReportMetric(runsPerS, "runs/s")
	b.ReportMetric(runsPerS/u.ceiling, "runs-per-ceiling")
	b.ReportMetric(float64(max(lastRunToLastEvent, 0).Microseconds())/1000, "last-event-to-last-run-ms")
	b.ReportMetric(float64(tb.clock.lastRun.Sub(t0).Microseconds())/1000, "last-run-at-ms")
	b.ReportMetric(float64(tb.listedAfter.Microseconds())/1000, "listed-after-ms")
	b.ReportMetric(perMs(res.cpu), "cpu-ms/event")
	b.ReportMetric(perMs(base.cpu), "senders-cpu-ms/event")
	b.ReportMetric(perMs(tb.apiCPU), "apiserver-cpu-ms/event")
	b.ReportMetric(perMs(tb.etcdCPU), "etcd-cpu-ms/event")
	b.ReportMetric(float64(tb.creates)/float64(nEvents), "writes/event")
	b.ReportMetric(float64(tb.mgrWrites)/float64(nEvents), "manager-writes/event")
	b.ReportMetric(float64(tb.mgrReqs)/float64(nEvents), "manager-requests/event")
	b.ReportMetric(float64(tb.secretGets)/float64(nEvents), "secret-gets/event")
	b.ReportMetric(memoEventsPerS, "memo-events/s")
	b.ReportMetric(memoRunsPerS/u.ceiling, "memo-runs-per-ceiling")
	b.ReportMetric(perMs(memo.res.cpu), "memo-cpu-ms/event")
	b.ReportMetric(perMs(memo.apiCPU), "memo-apiserver-cpu-ms/event")
	b.Logf("manager requests during the burst: %s", tb.counted)
	b.Logf("apiserver requests per event during the burst (apiserver_request_total, everyone's): %s", tb.apiserverPerEvent)
	first := "at the first listing"
	if !tb.firstList {
		first = "after more than one listing"
	}
	b.Logf("trigger burst: %d events over %d keys from %d senders in %s (%.0f events/s), %d runs (%d answers 201, %d 200, %d duplicates in memory), "+
		"%.1f runs/s = %.3f× the CAS write ceiling of %.0f w/s (target ≥ 0.7); the last run made %s into the burst (%.1f runs/s while keys were new, %.3f× the ceiling), %s before the last answer "+
		"(all %d listed %s, %s after it); this process %.3f CPU-ms/event (listener, manager and senders; the senders and a bare server alone %.3f), "+
		"apiserver %.3f, etcd %.3f CPU-ms/event; the manager wrote %d times (%.4f/event; %d run creates = %.4f/event) in %d requests (%.3f/event, %d Secret GETs)",
		nEvents, nKeys, senders, res.dur.Round(time.Millisecond), eventsPerS, tb.listed, res.codes[http.StatusCreated], res.codes[http.StatusOK], tb.clock.dups,
		runsPerS, runsPerS/u.ceiling, u.ceiling, tb.clock.lastRun.Sub(t0).Round(time.Millisecond),
		float64(nKeys)/tb.clock.lastRun.Sub(t0).Seconds(), float64(nKeys)/tb.clock.lastRun.Sub(t0).Seconds()/u.ceiling, (-lastRunToLastEvent).Round(time.Millisecond),
		tb.listed, first, tb.listedAfter.Round(time.Millisecond), perMs(res.cpu), perMs(base.cpu), perMs(tb.apiCPU), perMs(tb.etcdCPU),
		tb.mgrWrites, float64(tb.mgrWrites)/float64(nEvents), tb.creates, float64(tb.creates)/float64(nEvents),
		tb.mgrReqs, float64(tb.mgrReqs)/float64(nEvents), tb.secretGets)
	b.Logf("the same burst with the listener's Secret read once and kept (not how the manager reads it): %s (%.0f events/s), %.1f runs/s = %.3f× the ceiling; "+
		"this process %.3f, apiserver %.3f, etcd %.3f CPU-ms/event; %d manager requests (%d Secret GETs): %s",
		memo.res.dur.Round(time.Millisecond), memoEventsPerS, memoRunsPerS, memoRunsPerS/u.ceiling,
		perMs(memo.res.cpu), perMs(memo.apiCPU), perMs(memo.etcdCPU), memo.mgrReqs, memo.secretGets, memo.counted)
	b.ReportMetric(0, "ns/op")
}

// total is how many requests were counted.
func (rc *requestCounter) total() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, v := range rc.n {
		n += v
	}
	return n
}

// get is the count of one "VERB resource" ("POST agentruns").
func (rc *requestCounter) get(what string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n[what]
}
