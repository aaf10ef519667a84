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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// cancelledInFlight starts a run whose tool call is held by the server,
// cancels it while the call is in flight and returns the Cancelled run
// and the function that lets the call answer.
func cancelledInFlight(t *testing.T) (*harness, *toolServer, *manager, *exagentv1.AgentRun, func()) {
	h := newHarness(t)
	ts := newToolServer(t)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		<-release
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	m := h.startManager(controllers.Options{})
	h.createAgent("busy", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("work", "work", map[string]any{"amount": 1}),
			fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("work", ts.url("/work"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("busy", "busy")
	h.waitRun("busy", "the call in flight", func(r *exagentv1.AgentRun) bool {
		return len(r.Status.Calls) == 1 && r.Status.Calls[0].State == exagentv1.CallStarted && len(ts.journal()) == 1
	})
	h.decide(alice, h.decision("busy", "stop").Cancel().Reason("stop now"))
	if d := h.waitDecision("busy-stop"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("cancel = %s: %s", d.Status.Phase, d.Status.Message)
	}
	cancelled := h.waitPhase("busy", exagentv1.PhaseCancelled)
	if c := cancelled.Status.Calls[0]; c.State != exagentv1.CallUncertain || c.Outcome != nil {
		t.Errorf("call at the cancel = %s %+v, want Uncertain with no outcome", c.State, c.Outcome)
	}
	if cancelled.Status.Claim != nil {
		t.Errorf("claim %+v after the cancel, want none", cancelled.Status.Claim)
	}
	return h, ts, m, cancelled, free
}

// TestCancelWhileRunning cancels a run while its tool call is in flight:
// the claim is revoked and the run stops at once (no further model
// request); the call is journaled Uncertain (its effect may happen), and
// when it finishes its outcome is journaled in the Cancelled run — for
// the record: nothing runs again.
func TestCancelWhileRunning(t *testing.T) {
	h, ts, m, _, free := cancelledInFlight(t)
	free()
	run := h.waitRun("busy", "the late outcome journaled", func(r *exagentv1.AgentRun) bool {
		return m.ctrls.Runs.InFlight("busy", h.ns) == 0 && r.Status.Calls[0].State == exagentv1.CallSucceeded
	})
	if run.Status.Phase != exagentv1.PhaseCancelled || run.Status.Calls[0].Outcome == nil {
		t.Errorf("phase %s, call outcome %+v: want the outcome journaled in the Cancelled run", run.Status.Phase, run.Status.Calls[0].Outcome)
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("effects = %d, want 1", got)
	}
	if run.Status.Claim != nil || run.Status.Ledger.Requests != 1 {
		t.Errorf("claim %+v, requests %d; want no claim and no further model request", run.Status.Claim, run.Status.Ledger.Requests)
	}
}

// TestCancelledRunResolvedForTheRecord: the call in flight at the cancel
// stays Uncertain in the Cancelled run until someone resolves it for the
// record (nothing runs again); an answer arriving after that changes
// nothing.
func TestCancelledRunResolvedForTheRecord(t *testing.T) {
	h, ts, m, run, free := cancelledInFlight(t)
	c := run.Status.Calls[0]
	d := h.waitDecision(h.decide(alice, h.decision("busy", "record").Resolve(c, run.Status.Revision, exagentv1.ResolveSucceeded, "the tool server logged it")).Name)
	if d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("resolve = %s: %s", d.Status.Phase, d.Status.Message)
	}
	h.waitRun("busy", "the call recorded", func(r *exagentv1.AgentRun) bool {
		return r.Status.Calls[0].State == exagentv1.CallSucceeded
	})
	free() // the late answer: the record already says what happened
	if !eventually(func() bool { return m.ctrls.Runs.InFlight("busy", h.ns) == 0 }) {
		t.Fatal("the late answer was never handled")
	}
	recorded := h.waitPhase("busy", exagentv1.PhaseCancelled)
	if o := recorded.Status.Calls[0].Outcome; o == nil || o.Evidence != "the tool server logged it" {
		t.Errorf("outcome %+v, want the resolution's evidence", o)
	}
	if n := len(ts.journal()); n != 1 || recorded.Status.Ledger.Requests != 1 {
		t.Errorf("after the resolve: %d effects, %d model requests; want 1 and 1", n, recorded.Status.Ledger.Requests)
	}
}
