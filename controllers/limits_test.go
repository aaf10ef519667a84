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
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestRaisedLimitDoesNotWidenAPausedRun: a run paused for approval under
// maxToolCalls 1 journaled that limit at its claim; the Agent's limit
// raised to 10 while the run waits (and seen by the manager) does not
// widen it: once approved, the approved call runs and the next one ends
// the run LimitExceeded, never sent. Before status.limits the run read
// the raised limit at its next step and went on.
func TestRaisedLimitDoesNotWidenAPausedRun(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("a", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "pay", map[string]any{"amount": 1}),
			fixture.CallTurn("c2", "look", map[string]any{"amount": 2}),
			fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay")), fixture.HTTPTool("look", ts.url("/look"))},
		Policy: fixture.AskPolicy("pay"),
		Limits: exagentv1.LimitsSpec{MaxToolCalls: new(int32(1))},
	})
	h.createRun("r", "a")
	paused := h.waitPhase("r", exagentv1.PhaseAwaitingApproval)
	if l := paused.Status.Limits; l == nil || l.MaxToolCalls == nil || *l.MaxToolCalls != 1 {
		t.Fatalf("status.limits %+v, want maxToolCalls 1 journaled at the claim", l)
	}
	h.updateAgent("a", func(s *exagentv1.AgentSpec) { s.Limits.MaxToolCalls = new(int32(10)) })
	h.waitAgentSeen("a")
	h.approve(paused, "yes")
	done := h.waitRun("r", "the run's end", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if done.Status.Phase != exagentv1.PhaseFailed || done.Status.Reason != exagentv1.ReasonLimitExceeded ||
		!strings.Contains(done.Status.Message, "limit maxToolCalls (1) reached") {
		t.Fatalf("run %s %s %q, want Failed LimitExceeded at the journaled maxToolCalls (1)",
			done.Status.Phase, done.Status.Reason, done.Status.Message)
	}
	var paths []string
	for _, r := range ts.journal() {
		if r.Run == h.ns+"/r" {
			paths = append(paths, r.Path)
		}
	}
	if len(paths) != 1 || paths[0] != "/pay" {
		t.Errorf("tool requests of the run %v, want only the approved /pay", paths)
	}
	if l := done.Status.Limits; l == nil || l.MaxToolCalls == nil || *l.MaxToolCalls != 1 {
		t.Errorf("status.limits %+v at the end, want maxToolCalls 1 still", l)
	}
}

// TestActiveTimeCutsACallInFlight: a tool call started with the run's
// active time nearly used does not run past the balance. The http tool's
// server hangs (its own timeout is far off); the manager's clock is a
// fake one the test moves: a minute before the balance runs out the call
// still waits, once it runs out the request is cut — its outcome is
// unknown, since it was sent, so the run goes Uncertain — and the run is
// charged no more than its limit. Before, the call ran on until the
// tool's own timeout.
func TestActiveTimeCutsACallInFlight(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, cut := make(chan struct{}), make(chan struct{})
	var arrive, leave sync.Once
	ts.mu.Lock()
	ts.respond = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		arrive.Do(func() { close(arrived) })
		<-r.Context().Done() // never answers: only the client gives up
		leave.Do(func() { close(cut) })
	}
	ts.mu.Unlock()
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	slow := fixture.HTTPTool("slow", ts.url("/slow"))
	slow.HTTP.Timeout = "1h"
	h.createAgent("a", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("c1", "slow", map[string]any{"amount": 1}), fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{slow},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		Limits: exagentv1.LimitsSpec{ActiveTime: "10m"},
	})
	h.createRun("r", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "2h" })
	waitClosed(t, arrived, "the tool request")
	clk.Step(9 * time.Minute)
	select {
	case <-cut:
		t.Fatal("the call was cut a minute before the active time ran out")
	default:
	}
	clk.Step(2 * time.Minute) // past the 10 minutes
	waitClosed(t, cut, "the call cut when the active time ran out")
	run := h.waitPhase("r", exagentv1.PhaseUncertain)
	if len(run.Status.Calls) != 1 || run.Status.Calls[0].State != exagentv1.CallUncertain {
		t.Errorf("calls %+v, want c1 Uncertain: it was sent, its outcome is unknown", run.Status.Calls)
	}
	if used := run.Status.Ledger.ActiveTimeUsed.Duration; used > 10*time.Minute {
		t.Errorf("active time used %s, want at most the 10m limit", used)
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("tool requests %d, want 1 (not re-sent)", got)
	}
}
