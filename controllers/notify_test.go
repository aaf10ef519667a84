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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
)

// sink is a real notification endpoint on 127.0.0.1 that records what it
// receives; respond, when set, answers instead of 204.
type sink struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []delivery
	respond func(w http.ResponseWriter, r *http.Request, n int)
}

type delivery struct {
	Header http.Header
	Body   []byte
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, delivery{Header: r.Header.Clone(), Body: body})
		n, respond := len(s.got), s.respond
		s.mu.Unlock()
		if respond != nil {
			respond(w, r, n)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

// cloudEvents decodes the CloudEvents the sink received of type typ.
func (s *sink) cloudEvents(t *testing.T, typ string) []notify.CloudEvent {
	t.Helper()
	var out []notify.CloudEvent
	for _, d := range s.deliveries() {
		var ce notify.CloudEvent
		if err := json.Unmarshal(d.Body, &ce); err != nil {
			t.Fatalf("a delivery is not JSON: %v: %s", err, d.Body)
		}
		if ce.Type == typ {
			out = append(out, ce)
		}
	}
	return out
}

// waitFor waits until the sink received n requests matching match.
func (s *sink) waitFor(t *testing.T, what string, n int, match func(delivery) bool) []delivery {
	t.Helper()
	var hits []delivery
	if !eventually(func() bool {
		hits = nil
		for _, d := range s.deliveries() {
			if match(d) {
				hits = append(hits, d)
			}
		}
		return len(hits) >= n
	}) {
		t.Fatalf("sink: timed out waiting for %d× %s; got %d of %d requests", n, what, len(hits), len(s.deliveries()))
	}
	return hits
}

func ofType(typ string) func(delivery) bool {
	return func(d delivery) bool { return strings.Contains(string(d.Body), `"type":"`+typ+`"`) }
}

// capture keeps a delivered body for the docs (EXAGENT_NOTIFY_CAPTURE=dir).
func capture(t *testing.T, name string, body []byte) {
	if dir := os.Getenv("EXAGENT_NOTIFY_CAPTURE"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, name+".json"), body, 0o644)
	}
	t.Logf("%s: %s", name, body)
}

// verifySignature checks the Standard Webhooks headers of d independently
// of the code that made them.
func verifySignature(t *testing.T, d delivery, key []byte) {
	t.Helper()
	id, ts, sig := d.Header.Get("webhook-id"), d.Header.Get("webhook-timestamp"), d.Header.Get("webhook-signature")
	if id == "" || ts == "" || !strings.HasPrefix(sig, "v1,") {
		t.Fatalf("missing Standard Webhooks headers: id %q timestamp %q signature %q", id, ts, sig)
	}
	if sec, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(sec, 0)).Abs() > 10*time.Minute {
		t.Errorf("webhook-timestamp %q is not a recent Unix time", ts)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(d.Body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		t.Errorf("webhook-signature %q does not verify (want %q)", sig, want)
	}
}

func (h *harness) signingSecret(name string, key []byte) *exagentv1.SecretKeySelector {
	h.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Data: map[string][]byte{"key": []byte("whsec_" + base64.StdEncoding.EncodeToString(key))}}
	if err := h.c.Create(context.Background(), s); err != nil {
		h.t.Fatalf("creating secret: %v", err)
	}
	return &exagentv1.SecretKeySelector{Name: name, Key: "key"}
}

// record finds the journal entry of event for sink in run.
func record(run *exagentv1.AgentRun, event exagentv1.NotifyEvent, sinkName string) *exagentv1.NotificationRecord {
	for i := range run.Status.Notifications {
		if r := &run.Status.Notifications[i]; r.Event == event && r.Sink == sinkName {
			return r
		}
	}
	return nil
}

// TestNotifyApprovalRequested: a paused run tells the sinks: a signed
// CloudEvent with the tool, the arguments, who may decide and the
// commands, and a Slack message; the journal says Delivered; the end of
// the run is announced too.
func TestNotifyApprovalRequested(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ce, sl := newSink(t), newSink(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	spec := refundAgent(ts)
	spec.Policy.Approvers = &exagentv1.Approvers{Groups: []string{"exagent-test"}}
	spec.Notify = []exagentv1.NotifySink{
		{Name: "oncall", URL: ce.srv.URL + "/hook", SigningSecretRef: h.signingSecret("hook", key)},
		{Name: "slack", URL: sl.srv.URL + "/services/T0/B0/x", Format: exagentv1.NotifySlack,
			Events: []exagentv1.NotifyEvent{exagentv1.NotifyApprovalRequested, exagentv1.NotifyRunEnded}},
	}
	h.startManager(controllers.Options{})
	h.createAgent("payments", spec)
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	a := pendingApproval(t, paused)

	d := ce.waitFor(t, "approval-requested", 1, ofType("io.exagent.run.approval-requested"))[0]
	verifySignature(t, d, key)
	if got := d.Header.Get("Content-Type"); got != "application/cloudevents+json" {
		t.Errorf("Content-Type = %q", got)
	}
	capture(t, "cloudevents-approval-requested", d.Body)
	var ev notify.CloudEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.SpecVersion != "1.0" || ev.ID != d.Header.Get("webhook-id") || ev.Subject != a.ID ||
		ev.Source != "/apis/exagent.io/v1alpha1/namespaces/"+h.ns+"/agentruns/r1" {
		t.Errorf("CloudEvent envelope = %+v", ev)
	}
	ap := ev.Data.Approval
	if ap == nil || ap.Tool != "refund" || ap.Args != `{"amount":5}` || ap.ID != a.ID || ap.PayloadHash != a.PayloadHash || ap.ExpiresAt == nil {
		t.Errorf("approval data = %+v", ap)
	}
	if c := ev.Data.Commands; c == nil || c.Approve != `kubectl approve r1 `+a.ID+` -n `+h.ns+` --reason "…"` {
		t.Errorf("commands = %+v", c)
	}
	if dd := ev.Data.Deciders; dd == nil || !strings.Contains(dd.RBAC, `"approve" on agents/approval named "payments"`) || len(dd.Groups) != 1 {
		t.Errorf("deciders = %+v", dd)
	}
	s := sl.waitFor(t, "slack approval", 1, func(d delivery) bool { return strings.Contains(string(d.Body), "waits for your approval") })[0]
	capture(t, "slack-approval-requested", s.Body)
	for _, want := range []string{"refund", `{\"amount\":5}`, "kubectl approve r1 " + a.ID, "kubectl approve deny r1 " + a.ID, "Expires:", "Who may decide:"} {
		if !strings.Contains(string(s.Body), want) {
			t.Errorf("Slack message lacks %q: %s", want, s.Body)
		}
	}
	delivered := h.waitRun("r1", "approval-requested journaled Delivered", func(r *exagentv1.AgentRun) bool {
		rec := record(r, exagentv1.NotifyApprovalRequested, "oncall")
		return rec != nil && rec.State == exagentv1.NotificationDelivered
	})
	if rec := record(delivered, exagentv1.NotifyApprovalRequested, "oncall"); rec.ID != ev.ID || rec.Attempts != 1 {
		t.Errorf("journal %+v, want id %s after one attempt", rec, ev.ID)
	}

	h.approve(paused, "approve-1")
	h.waitPhase("r1", exagentv1.PhaseSucceeded)
	end := ce.waitFor(t, "run-ended", 1, ofType("io.exagent.run.run-ended"))[0]
	verifySignature(t, end, key)
	capture(t, "cloudevents-run-ended", end.Body)
	capture(t, "slack-run-ended", sl.waitFor(t, "slack end", 1, func(d delivery) bool { return strings.Contains(string(d.Body), "ended Succeeded") })[0].Body)
	h.waitRun("r1", "run-ended journaled Delivered", func(r *exagentv1.AgentRun) bool {
		rec := record(r, exagentv1.NotifyRunEnded, "slack")
		return rec != nil && rec.State == exagentv1.NotificationDelivered
	})
}

// TestNotifyAfterCrash: the manager dies right after the pause commit,
// before the notification is sent; the journal holds it Pending, and the
// next manager sends it, with the id journaled in the pause commit.
func TestNotifyAfterCrash(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	sk := newSink(t)
	spec := refundAgent(ts)
	spec.Notify = []exagentv1.NotifySink{{Name: "oncall", URL: sk.srv.URL}}
	var once sync.Once
	killed := make(chan struct{})
	first := h.startManagerWith(controllers.Options{}, func(kill func()) controllers.Hooks {
		return controllers.Hooks{BeforeNotify: func(_ context.Context, _ types.NamespacedName, rec exagentv1.NotificationRecord) {
			if rec.Event == exagentv1.NotifyApprovalRequested {
				once.Do(func() { kill(); close(killed) })
			}
		}}
	})
	t.Cleanup(first.stop)
	h.createAgent("payments", spec)
	h.createRun("r1", "payments")
	<-killed
	first.stop()
	if n := len(sk.deliveries()); n != 0 {
		t.Fatalf("the sink got %d requests before the crash, want 0", n)
	}
	var stored exagentv1.AgentRun
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "r1"}, &stored); err != nil {
		t.Fatal(err)
	}
	rec := record(&stored, exagentv1.NotifyApprovalRequested, "oncall")
	if stored.Status.Phase != exagentv1.PhaseAwaitingApproval || rec == nil || rec.State != exagentv1.NotificationPending {
		t.Fatalf("after the crash: phase %s, record %+v; want AwaitingApproval with the notification Pending", stored.Status.Phase, rec)
	}

	h.startManager(controllers.Options{})
	d := sk.waitFor(t, "approval-requested after the restart", 1, ofType("io.exagent.run.approval-requested"))[0]
	if got := d.Header.Get("webhook-id"); got != rec.ID {
		t.Errorf("webhook-id after the restart = %q, want the journaled id %q", got, rec.ID)
	}
	h.waitRun("r1", "Delivered", func(r *exagentv1.AgentRun) bool {
		x := record(r, exagentv1.NotifyApprovalRequested, "oncall")
		return x != nil && x.State == exagentv1.NotificationDelivered
	})
}

// TestNotifyFailingSinkNeverDelaysRun: a sink that holds its first
// request and then answers 500 does not hold the run: the run is
// approved and Succeeds while that request is still held. The run-ended
// notification is retried with the same id, then given up, with an Event.
func TestNotifyFailingSinkNeverDelaysRun(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	sk := newSink(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	arrived := make(chan struct{})
	var arrivedOnce sync.Once
	sk.respond = func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			arrivedOnce.Do(func() { close(arrived) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		http.Error(w, "sink is down", http.StatusInternalServerError)
	}
	spec := refundAgent(ts)
	spec.Notify = []exagentv1.NotifySink{{Name: "broken", URL: sk.srv.URL}}
	h.startManager(controllers.Options{NotifyRetry: notify.Retry{Attempts: 3, Base: 100 * time.Millisecond, Max: time.Second}})
	h.createAgent("payments", spec)
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	<-arrived // the approval-requested delivery is held by the sink

	h.approve(paused, "approve-1")
	h.waitPhase("r1", exagentv1.PhaseSucceeded)
	select {
	case <-release:
		t.Fatal("released early")
	default: // the run ended while the sink still held the first request
	}
	releaseOnce.Do(func() { close(release) })

	attempts := sk.waitFor(t, "run-ended attempts", 3, ofType("io.exagent.run.run-ended"))
	for _, d := range attempts {
		if d.Header.Get("webhook-id") != attempts[0].Header.Get("webhook-id") {
			t.Errorf("retries carry different ids: %q and %q", d.Header.Get("webhook-id"), attempts[0].Header.Get("webhook-id"))
		}
	}
	failed := h.waitRun("r1", "run-ended journaled Failed", func(r *exagentv1.AgentRun) bool {
		x := record(r, exagentv1.NotifyRunEnded, "broken")
		return x != nil && x.State == exagentv1.NotificationFailed
	})
	rec := record(failed, exagentv1.NotifyRunEnded, "broken")
	if rec.Attempts != 3 || !strings.Contains(rec.LastError, "HTTP 500") {
		t.Errorf("record = %+v, want 3 attempts and the 500 as last error", rec)
	}
	if x := record(failed, exagentv1.NotifyApprovalRequested, "broken"); x == nil || x.State != exagentv1.NotificationSuperseded {
		t.Errorf("approval-requested record = %+v, want Superseded (the approval was decided first)", x)
	}
	if note := h.eventNote("r1", "NotificationFailed"); !strings.Contains(note, "RunEnded") && !strings.Contains(note, "ApprovalRequested") {
		t.Errorf("NotificationFailed note = %q", note)
	}
	if got := len(sk.cloudEvents(t, "io.exagent.run.run-ended")); got != 3 {
		t.Errorf("run-ended sent %d times, want 3 (bounded)", got)
	}
}

// TestNotifyApprovalExpiringAndExpired: a pending approval is announced
// again a quarter of its timeout before it expires, then the run's end
// (Expired) is announced.
func TestNotifyApprovalExpiringAndExpired(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	sk := newSink(t)
	spec := refundAgent(ts)
	spec.Notify = []exagentv1.NotifySink{{Name: "oncall", URL: sk.srv.URL}}
	h.startManager(controllers.Options{})
	h.createAgent("payments", spec)
	h.createRun("r1", "payments", func(r *exagentv1.AgentRunSpec) { r.ApprovalTimeout = "8s" })
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	a := pendingApproval(t, paused)
	d := sk.waitFor(t, "approval-expiring", 1, ofType("io.exagent.run.approval-expiring"))[0]
	capture(t, "cloudevents-approval-expiring", d.Body)
	var ev notify.CloudEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Data.Approval == nil || ev.Data.Approval.ID != a.ID || ev.Data.Commands == nil {
		t.Errorf("approval-expiring data = %+v", ev.Data)
	}
	h.waitPhase("r1", exagentv1.PhaseExpired)
	end := sk.waitFor(t, "run-ended", 1, ofType("io.exagent.run.run-ended"))[0]
	if !strings.Contains(string(end.Body), `"phase":"Expired"`) {
		t.Errorf("run-ended does not say Expired: %s", end.Body)
	}
}

// TestNotifyRunUncertain: a run whose owner died after the intent commit
// becomes Uncertain at its recovery, and the sink is told which call has no
// outcome and the command that resolves it.
func TestNotifyRunUncertain(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	sk := newSink(t)
	h.createAgent("tickets", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("ticket", "open_ticket", map[string]any{"amount": 42}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("open_ticket", ts.url("/tickets"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		Notify: []exagentv1.NotifySink{{Name: "oncall", URL: sk.srv.URL, Events: []exagentv1.NotifyEvent{exagentv1.NotifyRunUncertain}}},
	})
	var once sync.Once
	killed := make(chan struct{})
	first := h.startManagerWith(controllers.Options{}, func(kill func()) controllers.Hooks {
		return controllers.Hooks{AfterIntentCommit: func(context.Context, types.NamespacedName, []loop.ToolInvocation) {
			once.Do(func() { kill(); close(killed) })
		}}
	})
	t.Cleanup(first.stop)
	h.createRun("r1", "tickets", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "2s"; r.ActiveTimeLimit = exagentv1.Never })
	<-killed
	first.stop()
	h.startManager(controllers.Options{})
	h.waitPhase("r1", exagentv1.PhaseUncertain)
	d := sk.waitFor(t, "run-uncertain", 1, ofType("io.exagent.run.run-uncertain"))[0]
	capture(t, "cloudevents-run-uncertain", d.Body)
	var ev notify.CloudEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Data.Uncertain) != 1 || ev.Data.Uncertain[0].Tool != "open_ticket" || len(ev.Data.Resolve) != 1 ||
		!strings.Contains(ev.Data.Resolve[0], "kubectl approve resolve r1 -n "+h.ns+" --call ticket") {
		t.Errorf("run-uncertain data = %+v", ev.Data)
	}
	if n := len(sk.deliveries()); n != 1 {
		t.Errorf("the sink got %d requests, want only run-uncertain (its events filter)", n)
	}
}
