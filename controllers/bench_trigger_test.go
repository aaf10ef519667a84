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

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/triggers"
)

// The trigger burst benchmark (issue 40, make bench).
var (
	triggerEvents  = flag.Int("trigger.events", 10000, "BenchmarkTriggerBurst: events sent, one delivery each")
	triggerKeys    = flag.Int("trigger.keys", 100, "BenchmarkTriggerBurst: dedup keys the events fall on (the runs it makes)")
	triggerSenders = flag.Int("trigger.senders", 8, "BenchmarkTriggerBurst: concurrent senders")
)

// triggerBurstToken is the bench trigger's bearer token.
const triggerBurstToken = "burst-token"

// runClock is a triggers.Recorder that notes when the runs were made: the
// handler tells it each delivery's outcomes once that delivery's runs are
// created (synchronously, before the answer).
type runClock struct {
	mu       sync.Mutex
	runs     int
	dups     int
	lastRun  time.Time
	firstRun time.Time
}

func (rc *runClock) Record(_ types.NamespacedName, counts map[triggers.Outcome]int, _ string, _ time.Time) {
	now := time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.dups += counts[triggers.OutcomeDuplicate]
	if n := counts[triggers.OutcomeRun]; n > 0 {
		rc.runs += n
		rc.lastRun = now
		if rc.firstRun.IsZero() {
			rc.firstRun = now
		}
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
// answers, is reported apart. Timings are reported, never asserted.
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
	at := &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
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

	m := h.startBenchManager(benchOptions(), nil)
	defer m.stop()
	// The manager is up and has read the trigger (its Ready condition).
	h.waitTriggerReady("burst", exagentv1.ReasonTriggerReady)
	runs := &controllers.TriggerRuns{Client: m.ctrls.TriggerRuns.Client, APIReader: m.ctrls.TriggerRuns.APIReader}
	clock := &runClock{}
	listener := httptest.NewServer(&triggers.Handler{Lookup: runs, Creator: runs, Recorder: clock})
	defer listener.Close()
	// Warm: the cache's AgentTrigger informer synced, the trigger compiled
	// (no event sent: no run made).
	if _, err := runs.Trigger(ctx, types.NamespacedName{Namespace: h.ns, Name: "burst"}); err != nil {
		b.Fatalf("the listener cannot read the trigger: %v", err)
	}

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

	benchRequests.reset()
	r0 := apiserverRequests(b)
	api0, etcd0 := cpuSeconds(b, api), cpuSeconds(b, etcd)
	b.ResetTimer()
	res := sendBurst(b, listener.URL+"/triggers/"+h.ns+"/burst", bodies, senders)
	b.StopTimer()
	apiCPU, etcdCPU := cpuSeconds(b, api)-api0, cpuSeconds(b, etcd)-etcd0
	mgrWrites, mgrReqs := benchRequests.writes(), benchRequests.total()
	counted := benchRequests.String()
	creates, secretGets := benchRequests.get("POST agentruns"), benchRequests.get("GET secrets")
	perEvent := requestsSince(b, r0, nEvents)

	// The runs exist when the last answer is in: listed at once (the
	// wait is a deadline, not a pace).
	var listed []exagentv1.AgentRun
	if !eventually(func() bool {
		list := &exagentv1.AgentRunList{}
		if err := h.c.List(ctx, list, client.InNamespace(h.ns), client.MatchingLabels{exagentv1.LabelTrigger: "burst"}); err != nil {
			return false
		}
		listed = list.Items
		return len(listed) >= nKeys
	}) {
		b.Fatalf("%d runs listed %s after the burst, want %d", len(listed), waitTimeout, nKeys)
	}
	listedAfter := time.Since(res.lastAnswer)

	// Correctness: every event answered 201 or 200, one run per key.
	if len(res.errs) > 0 {
		b.Fatalf("%d events failed, e.g. %v (answers %v)", len(res.errs), res.errs[0], res.codes)
	}
	if res.codes[http.StatusCreated]+res.codes[http.StatusOK] != nEvents {
		b.Fatalf("answers %v, want %d events answered 201 or 200", res.codes, nEvents)
	}
	if len(listed) != nKeys || res.codes[http.StatusCreated] != nKeys || clock.runs != nKeys {
		b.Fatalf("%d runs listed, %d answers 201, %d runs recorded: want %d (one per key)", len(listed), res.codes[http.StatusCreated], clock.runs, nKeys)
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
		b.Fatalf("the %d runs name %d distinct keys, want %d", len(listed), len(keys), nKeys)
	}

	t0 := res.lastAnswer.Add(-res.dur)
	lastRunToLastEvent := clock.lastRun.Sub(res.lastAnswer) // ≤ 0: the runs are made inside the deliveries
	eventsPerS := float64(nEvents) / res.dur.Seconds()
	runsPerS := float64(nKeys) / res.dur.Seconds()
	cpuPerEvent := res.cpu / float64(nEvents) * 1000
	basePerEvent := base.cpu / float64(nEvents) * 1000
	u.report(b)
	b.ReportMetric(res.dur.Seconds()*1000, "burst-ms")
	b.ReportMetric(eventsPerS, "events/s")
	b.ReportMetric(runsPerS, "runs/s")
	b.ReportMetric(runsPerS/u.ceiling, "runs-per-ceiling")
	b.ReportMetric(float64(max(lastRunToLastEvent, 0).Microseconds())/1000, "last-event-to-last-run-ms")
	b.ReportMetric(float64(clock.lastRun.Sub(t0).Microseconds())/1000, "last-run-at-ms")
	b.ReportMetric(float64(listedAfter.Microseconds())/1000, "listed-after-ms")
	b.ReportMetric(cpuPerEvent, "cpu-ms/event")
	b.ReportMetric(basePerEvent, "senders-cpu-ms/event")
	b.ReportMetric(apiCPU/float64(nEvents)*1000, "apiserver-cpu-ms/event")
	b.ReportMetric(etcdCPU/float64(nEvents)*1000, "etcd-cpu-ms/event")
	b.ReportMetric(float64(creates)/float64(nEvents), "writes/event")
	b.ReportMetric(float64(mgrWrites)/float64(nEvents), "manager-writes/event")
	b.ReportMetric(float64(mgrReqs)/float64(nEvents), "manager-requests/event")
	b.ReportMetric(float64(secretGets)/float64(nEvents), "secret-gets/event")
	b.Logf("manager requests during the burst: %s", counted)
	b.Logf("apiserver requests per event during the burst (apiserver_request_total, everyone's): %s", perEvent)
	b.Logf("trigger burst: %d events over %d keys from %d senders in %s (%.0f events/s), %d runs (%d answers 201, %d 200, %d duplicates in memory), "+
		"%.1f runs/s = %.3f× the CAS write ceiling of %.0f w/s (target ≥ 0.7); the last run made %s into the burst, %s before the last answer "+
		"(listed %s after it); this process %.3f CPU-ms/event (listener, manager and senders; the senders and a bare server alone %.3f), "+
		"apiserver %.3f, etcd %.3f CPU-ms/event; the manager wrote %d times (%.4f/event; %d run creates = %.4f/event) in %d requests (%.3f/event, %d Secret GETs)",
		nEvents, nKeys, senders, res.dur.Round(time.Millisecond), eventsPerS, len(listed), res.codes[http.StatusCreated], res.codes[http.StatusOK], clock.dups,
		runsPerS, runsPerS/u.ceiling, u.ceiling, clock.lastRun.Sub(t0).Round(time.Millisecond), (-lastRunToLastEvent).Round(time.Millisecond),
		listedAfter.Round(time.Millisecond), cpuPerEvent, basePerEvent,
		apiCPU/float64(nEvents)*1000, etcdCPU/float64(nEvents)*1000,
		mgrWrites, float64(mgrWrites)/float64(nEvents), creates, float64(creates)/float64(nEvents), mgrReqs, float64(mgrReqs)/float64(nEvents), secretGets)
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
