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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/triggers"
)

// statsReplica is a listener whose counts go to stats.
func (h *harness) statsReplica(stats *controllers.TriggerStats) *httptest.Server {
	runs := &controllers.TriggerRuns{Client: h.c, APIReader: h.c}
	srv := httptest.NewServer(&triggers.Handler{Lookup: runs, Creator: runs, Recorder: stats})
	h.t.Cleanup(srv.Close)
	return srv
}

func (h *harness) trigger(name string) *exagentv1.AgentTrigger {
	h.t.Helper()
	at := &exagentv1.AgentTrigger{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, at); err != nil {
		h.t.Fatal(err)
	}
	return at
}

// waitTriggerReady waits for the trigger's Ready condition to have reason.
func (h *harness) waitTriggerReady(name, reason string) *metav1.Condition {
	h.t.Helper()
	var c *metav1.Condition
	if !eventually(func() bool {
		c = meta.FindStatusCondition(h.trigger(name).Status.Conditions, exagentv1.ConditionReady)
		return c != nil && c.Reason == reason
	}) {
		h.t.Fatalf("AgentTrigger %s Ready = %+v, want reason %s", name, c, reason)
	}
	return c
}

// TestTriggerStatus: a trigger whose Secret is missing is not Ready and
// says which Secret (with a Warning Event), and Ready once it exists; one
// without an admission-stamped setter is not Ready either. With
// maxConcurrentRuns 1, a second event while the first run has not ended
// is dropped — counted in the status with an EventsDropped Event — and
// an event after that run ended makes a run again; the status counts the
// events, runs, duplicates and drops, and names the last run.
func TestTriggerStatus(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	ctx := context.Background()
	bearer := func(name string) *exagentv1.TriggerSource {
		return &exagentv1.TriggerSource{Webhook: &exagentv1.WebhookTriggerSource{Auth: &exagentv1.TriggerAuth{
			BearerTokenSecretRef: &exagentv1.SecretKeySelector{Name: name, Key: "token"}}}}
	}
	// The runs wait for an Agent that does not exist yet: they have not
	// ended, so they hold the trigger's one concurrent slot.
	tmpl := exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "later"}, Input: "Look:"}
	limited := &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{Name: "limited", Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
		Source: bearer("tokens"), RunTemplate: tmpl, Input: `event.what`, DedupKey: `event.what`, MaxConcurrentRuns: ptr.To[int32](1)}}
	unsealed := &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{Name: "unsealed", Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
		Source: bearer("tokens"), RunTemplate: tmpl, Input: `event.what`}}
	setBy(limited, "dave")
	for _, at := range []*exagentv1.AgentTrigger{limited, unsealed} {
		if err := h.c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	c := h.waitTriggerReady("limited", exagentv1.ReasonSecretUnavailable)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "Secret "+h.ns+"/tokens") {
		t.Errorf("Ready = %+v, want False naming the Secret", c)
	}
	h.eventNote("limited", controllers.EventTriggerNotReady)
	if err := h.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tokens", Namespace: h.ns},
		StringData: map[string]string{"token": "t0ken"}}); err != nil {
		t.Fatal(err)
	}
	h.waitTriggerReady("unsealed", exagentv1.ReasonNoRequester)
	// The manager watches no Secrets: a touch of the trigger looks again
	// (otherwise it does within a minute).
	touched := h.trigger("limited")
	touched.Annotations["touched"] = "1"
	if err := h.c.Update(ctx, touched); err != nil {
		t.Fatal(err)
	}
	h.waitTriggerReady("limited", exagentv1.ReasonTriggerReady)

	stats := &controllers.TriggerStats{Client: h.c, Recorder: nil}
	srv := h.statsReplica(stats)
	auth := http.Header{"Authorization": {"Bearer t0ken"}}
	path := "/triggers/" + h.ns + "/limited"
	if code, res := postTo(t, srv, path, []byte(`{"what":"a"}`), auth); code != http.StatusCreated || len(res.Runs) != 1 {
		t.Fatalf("the first event: %d %+v", code, res)
	}
	first := h.triggerRuns("limited")
	if len(first) != 1 {
		t.Fatalf("%d runs, want 1", len(first))
	}
	if code, res := postTo(t, srv, path, []byte(`{"what":"a"}`), auth); code != http.StatusOK || res.Duplicates != 1 {
		t.Errorf("the same key again: %d %+v, want a duplicate", code, res)
	}
	if code, res := postTo(t, srv, path, []byte(`{"what":"b"}`), auth); code != http.StatusOK || res.OverConcurrency != 1 {
		t.Errorf("another key while the first run is active: %d %+v, want it dropped over maxConcurrentRuns", code, res)
	}
	stats.Flush(ctx)
	got := h.trigger("limited").Status
	if want := (exagentv1.TriggerCounts{Events: 3, Runs: 1, Duplicates: 1, Dropped: 1}); got.Counts != want {
		t.Errorf("counts %+v, want %+v", got.Counts, want)
	}
	if got.LastRunName != first[0].Name || got.LastEventTime == nil {
		t.Errorf("last run %q at %v, last event %v; want %s", got.LastRunName, got.LastRunTime, got.LastEventTime, first[0].Name)
	}
	if !eventually(func() bool { return h.trigger("limited").Status.ActiveRuns == 1 }) {
		t.Errorf("activeRuns = %d, want 1", h.trigger("limited").Status.ActiveRuns)
	}

	// The Agent comes: the run ends, its slot frees, and the dropped key
	// (never deduplicated, since it made no run) makes one now.
	h.createAgent("later", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("seen"))})
	h.waitPhase(first[0].Name, exagentv1.PhaseSucceeded)
	var second triggers.Result
	if !eventually(func() bool {
		var code int
		code, second = postTo(t, srv, path, []byte(`{"what":"b"}`), auth)
		return code == http.StatusCreated
	}) {
		t.Fatalf("the dropped key after the run ended: %+v, want a run", second)
	}
	// The second run runs to its end too: no run of the trigger is active.
	h.waitPhase(second.Runs[0], exagentv1.PhaseSucceeded)
	if !eventually(func() bool { return h.trigger("limited").Status.ActiveRuns == 0 && len(h.triggerRuns("limited")) == 2 }) {
		t.Errorf("activeRuns = %d with %d runs, want none active of 2", h.trigger("limited").Status.ActiveRuns, len(h.triggerRuns("limited")))
	}
	var list exagentv1.AgentRunList
	if err := h.c.List(ctx, &list, client.InNamespace(h.ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("%d runs in the namespace, want 2 (the unsealed trigger makes none)", len(list.Items))
	}
}

// TestTriggerSecretRotation: the listener keeps a trigger's Secret value
// (no apiserver read per delivery), yet a delivery with a rotated token
// is checked against a fresh read and makes its run, while the old token
// is refused from then on.
func TestTriggerSecretRotation(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rotating", Namespace: h.ns}, StringData: map[string]string{"token": "old"}}
	if err := h.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	at := &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{Name: "rotating", Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
		Source: &exagentv1.TriggerSource{Webhook: &exagentv1.WebhookTriggerSource{Auth: &exagentv1.TriggerAuth{
			BearerTokenSecretRef: &exagentv1.SecretKeySelector{Name: "rotating", Key: "token"}}}},
		RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "none"}, Input: "Look:"},
		Input:       `event.what`, DedupKey: `event.what`}}
	setBy(at, "dave")
	if err := h.c.Create(ctx, at); err != nil {
		t.Fatal(err)
	}
	runs := &controllers.TriggerRuns{Client: h.c, APIReader: h.c, Clock: clk}
	srv := httptest.NewServer(&triggers.Handler{Lookup: runs, Creator: runs, Clock: clk})
	t.Cleanup(srv.Close)
	path := "/triggers/" + h.ns + "/rotating"
	post := func(token, what string) int {
		code, _ := postTo(t, srv, path, []byte(`{"what":"`+what+`"}`), http.Header{"Authorization": {"Bearer " + token}})
		return code
	}
	if code := post("old", "a"); code != http.StatusCreated {
		t.Fatalf("the first delivery: %d", code)
	}
	secret.StringData = map[string]string{"token": "new"}
	if err := h.c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// Within the value's lifetime the kept one still answers.
	if code := post("old", "b"); code != http.StatusCreated {
		t.Errorf("the old token while the value is kept: %d, want 201", code)
	}
	clk.Step(2 * time.Second)
	if code := post("new", "c"); code != http.StatusCreated {
		t.Errorf("the rotated token: %d, want 201 after a fresh read", code)
	}
	if code := post("old", "d"); code != http.StatusUnauthorized {
		t.Errorf("the old token after the rotation was read: %d, want 401", code)
	}
	if n := len(h.triggerRuns("rotating")); n != 3 {
		t.Errorf("%d runs, want 3", n)
	}
}
