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
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// blockingTool makes ts hold every request until release is closed, and
// signals arrived at the first one.
func blockingTool(ts *toolServer) (arrived, release chan struct{}) {
	arrived, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	ts.mu.Lock()
	ts.respond = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		once.Do(func() { close(arrived) })
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	ts.mu.Unlock()
	return arrived, release
}

// TestDrainOnStop: a manager stopped while an allowed http tool call is in
// flight lets the call finish within the drain, commits its outcome and
// hands the run back in one fenced commit; the next manager finishes the
// run with no second effect.
func TestDrainOnStop(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, release := blockingTool(ts)
	h.createAgent("drain", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("ticket", "open_ticket", map[string]any{"amount": 42}),
			fixture.TextTurn("ticket handled"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("open_ticket", ts.url("/tickets"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	first := h.startManager(controllers.Options{ReleaseOnStop: true, DrainTimeout: waitTimeout})
	h.createRun("r", "drain", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	<-arrived
	first.cancel() // the stop (SIGTERM): the call is in flight
	close(release) // the tool answers during the drain
	<-first.done

	var stopped exagentv1.AgentRun
	if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: h.ns, Name: "r"}, &stopped); err != nil {
		t.Fatal(err)
	}
	if p := stopped.Status.Phase; p != exagentv1.PhaseQueued && p != exagentv1.PhaseApproved {
		t.Fatalf("phase after the stop = %s (%s: %s), want Queued or Approved", p, stopped.Status.Reason, stopped.Status.Message)
	}
	if stopped.Status.Claim != nil {
		t.Fatalf("claim = %+v after the release, want none", stopped.Status.Claim)
	}
	if len(stopped.Status.Calls) != 1 || stopped.Status.Calls[0].State != exagentv1.CallSucceeded {
		t.Fatalf("calls after the stop = %+v, want one Succeeded", stopped.Status.Calls)
	}
	if got := len(ts.journal()); got != 1 {
		t.Fatalf("tool journal has %d requests after the stop, want 1", got)
	}

	h.startManager(controllers.Options{})
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if got := len(ts.journal()); got != 1 {
		t.Fatalf("tool journal has %d requests, want 1", got)
	}
	if done.Status.Calls[0].State != exagentv1.CallSucceeded {
		t.Errorf("call state = %s, want Succeeded", done.Status.Calls[0].State)
	}
	if !historyContains(done, `{"ok":true}`) {
		t.Errorf("the model did not see the tool's answer: %+v", done.Status.History)
	}
}

// TestDrainTimeout: when the drain ends before the tool answers, the call is
// cut short and the run is left as a crash leaves it: Uncertain once its
// lease expires, never sent again.
func TestDrainTimeout(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, release := blockingTool(ts)
	h.createAgent("slow", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("ticket", "open_ticket", map[string]any{"amount": 42}),
			fixture.TextTurn("ticket handled"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("open_ticket", ts.url("/tickets"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	first := h.startManager(controllers.Options{ReleaseOnStop: true, DrainTimeout: 100 * time.Millisecond})
	// No active-time limit: a dead owner's reservation is charged whole.
	h.createRun("r", "slow", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "2s"; r.ActiveTimeLimit = exagentv1.Never })
	<-arrived
	first.stop() // returns once the drain cut the call short
	close(release)

	var stopped exagentv1.AgentRun
	if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: h.ns, Name: "r"}, &stopped); err != nil {
		t.Fatal(err)
	}
	if stopped.Status.Phase != exagentv1.PhaseRunning || stopped.Status.Calls[0].State != exagentv1.CallStarted {
		t.Fatalf("after the stop: phase %s, calls %+v; want Running with the call Started", stopped.Status.Phase, stopped.Status.Calls)
	}

	h.startManager(controllers.Options{})
	run := h.waitPhase("r", exagentv1.PhaseUncertain)
	if run.Status.Calls[0].State != exagentv1.CallUncertain {
		t.Fatalf("call state = %s, want Uncertain", run.Status.Calls[0].State)
	}
	if got := len(ts.journal()); got != 1 {
		t.Fatalf("tool journal has %d requests, want 1", got)
	}
}
