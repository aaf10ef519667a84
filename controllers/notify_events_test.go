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
	"sync"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// eventNote waits for an Event of reason about object name and returns its note.
func (h *harness) eventNote(name, reason string) string {
	h.t.Helper()
	var note string
	if eventually(func() bool {
		var list eventsv1.EventList
		if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				note = e.Note
				return true
			}
		}
		return false
	}) {
		return note
	}
	h.t.Fatalf("no %s Event about %s", reason, name)
	return ""
}

// TestApprovalRequestedEventIsActionable: the Event names the tool, shows
// the arguments and gives the command that decides this approval.
func TestApprovalRequestedEventIsActionable(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("payments", refundAgent(ts))
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	a := pendingApproval(t, paused)
	note := h.eventNote("r1", "ApprovalRequested")
	for _, want := range []string{`refund({"amount":5})`, a.ID, "kubectl approve r1 " + a.ID + " -n " + h.ns, "until "} {
		if !strings.Contains(note, want) {
			t.Errorf("ApprovalRequested note %q lacks %q", note, want)
		}
	}
}

// TestRunEndedInDrainHasAnEvent: a run whose last allowed model failure
// comes back during the drain ends Failed in the hand-back commit, and
// its RunFailed Event is sent as a reconcile would send it.
func TestRunEndedInDrainHasAnEvent(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	calls := 0
	third, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 3 { // the last re-send the engine allows: held until the stop
			close(third)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"bad key","type":"invalid_request_error"}}`))
	}))
	t.Cleanup(srv.Close)
	first := h.startManager(controllers.Options{ReleaseOnStop: true, DrainTimeout: waitTimeout})
	h.createAgent("llm", exagentv1.AgentSpec{
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: srv.URL + "/v1"},
	})
	h.createRun("r", "llm", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	<-third
	first.cancel() // the stop: the third request is in flight
	close(release) // it fails during the drain
	<-first.done

	run := h.waitPhase("r", exagentv1.PhaseFailed)
	if run.Status.Reason != exagentv1.ReasonModelError {
		t.Fatalf("reason = %s (%s), want ModelError", run.Status.Reason, run.Status.Message)
	}
	if note := h.eventNote("r", "RunFailed"); !strings.Contains(note, "ModelError") {
		t.Errorf("RunFailed note = %q, want the reason", note)
	}
}
