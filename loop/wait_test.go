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

package loop

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// sleepAgent: a Sleep tool (allowed unless ask) and an allowed http tool.
func sleepAgent(ask bool) *fixture.AgentWrapper {
	a := MakeAgent().SleepTool("sleep").HTTPTool("search", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search")
	if ask {
		return a.Rule("sleep-ask", exagentv1.PolicyAsk, "", "sleep")
	}
	return a.Rule("sleep-ok", exagentv1.PolicyAllow, "", "sleep")
}

// sleepFor is a model answer asking to sleep for d (JSON text).
func sleepFor(id, duration string) exagentv1.MessageToolCall {
	return call(id, "sleep", `{"duration":`+duration+`}`)
}

// outcomeOf is the result of call id.
func outcomeOf(t *testing.T, s Status, id string) string {
	t.Helper()
	i := findCall(&s, id)
	if i < 0 || s.Calls[i].Outcome == nil {
		t.Fatalf("call %s has no outcome", id)
	}
	return s.Calls[i].Outcome.Result
}

// TestSleepBegins: an allowed Sleep starts no IO: it waits until now plus
// the shortest of its duration, limits.maxWait and what is left before the
// deadline, and the run goes Waiting; a duration that cannot be waited is
// a failed call the model sees, and the run goes on to its next request.
func TestSleepBegins(t *testing.T) {
	cases := map[string]struct {
		agent    *fixture.AgentWrapper
		deadline time.Duration // from t0; 0: none
		duration string        // JSON
		until    time.Duration // from the step; 0: the call fails
		fails    string        // in the failed call's result
	}{
		"ten minutes":           {agent: sleepAgent(false), duration: `"10m"`, until: 10 * time.Minute},
		"zero wakes at once":    {agent: sleepAgent(false), duration: `"0s"`, until: 0, fails: ""},
		"up to the default max": {agent: sleepAgent(false), duration: `"24h"`, until: 24 * time.Hour},
		"cut at the deadline":   {agent: sleepAgent(false), deadline: 30 * time.Minute, duration: `"1h"`, until: 30*time.Minute - time.Second},
		"maxWait Never":         {agent: sleepAgent(false).MaxWait(exagentv1.Never), duration: `"100h"`, until: 100 * time.Hour},
		"within maxWait":        {agent: sleepAgent(false).MaxWait("2h"), duration: `"1h30m"`, until: 90 * time.Minute},
		"over the default max":  {agent: sleepAgent(false), duration: `"48h"`, fails: "limits.maxWait 24h0m0s"},
		"over maxWait":          {agent: sleepAgent(false).MaxWait("1h"), duration: `"2h"`, fails: "limits.maxWait 1h0m0s"},
		"negative":              {agent: sleepAgent(false), duration: `"-5m"`, fails: "negative"},
		"unparsable":            {agent: sleepAgent(false), duration: `"soon"`, fails: "not a duration"},
		"not a string (schema)": {agent: sleepAgent(false), duration: `42`, fails: "parameters schema"},
		"ask rule, invalid too": {agent: sleepAgent(true), duration: `"soon"`, fails: "not a duration"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run := MakeRun()
			if tc.deadline != 0 {
				run = run.Deadline(t0.Add(tc.deadline))
			}
			h := newHarness(t, mustEnv(t, tc.agent.Spec(), run.Spec())).claim(w1)
			h.step()
			h.advance(time.Second)
			h.respond(tools(sleepFor("z1", tc.duration)))
			act := h.step()
			c := h.s.Calls[findCall(&h.s, "z1")]
			if tc.fails != "" {
				if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, tc.fails) {
					t.Fatalf("call %s %+v, want Failed with %q", c.State, c.Outcome, tc.fails)
				}
				if act.Kind != ActCallModel || h.s.Phase != exagentv1.PhaseRunning {
					t.Fatalf("after a failed sleep: %s, phase %s; want the next model request", act.Kind, h.s.Phase)
				}
				if c.Wait != nil {
					t.Fatalf("a failed sleep journaled a wait: %+v", c.Wait)
				}
				return
			}
			if tc.until == 0 {
				// A zero wait is over when it begins: the model is told at once.
				if c.State != exagentv1.CallSucceeded || act.Kind != ActCallModel {
					t.Fatalf("zero sleep: call %s, action %s", c.State, act.Kind)
				}
				return
			}
			now := t0.Add(time.Second)
			if act.Kind != ActWaitUntil || !act.WakeAt.Equal(now.Add(tc.until)) {
				t.Fatalf("action %s wake at %s, want WaitUntil %s", act.Kind, act.WakeAt, now.Add(tc.until))
			}
			if c.State != exagentv1.CallStarted || c.Wait == nil || c.Wait.Kind != exagentv1.WaitTimer ||
				!c.Wait.Since.Time.Equal(now) || !c.Wait.Until.Time.Equal(now.Add(tc.until)) {
				t.Fatalf("call %s wait %+v", c.State, c.Wait)
			}
			if h.s.Phase != exagentv1.PhaseWaiting || h.s.Reason != exagentv1.ReasonWaiting || h.s.Claim != nil {
				t.Fatalf("phase %s reason %s claim %+v; want Waiting, no claim", h.s.Phase, h.s.Reason, h.s.Claim)
			}
			if h.s.Ledger.ToolCalls != 1 {
				t.Fatalf("ledger.toolCalls %d, want 1", h.s.Ledger.ToolCalls)
			}
			if got := Outstanding(h.s, h.f); len(got) != 0 {
				t.Fatalf("a wait is outstanding IO: %+v", got)
			}
			if err := validateContinuation(&h.s); err != nil {
				t.Fatalf("integrity: %v", err)
			}
		})
	}
}

// TestSleepWakes: Waiting charges active time only up to the wait; Wake
// before the wait ends changes nothing, at its end closes the call with
// how long it slept and queues the run, whose next request carries it.
func TestSleepWakes(t *testing.T) {
	env := mustEnv(t, sleepAgent(false).Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.advance(5 * time.Second)
	h.respond(tools(sleepFor("z1", `"10m"`)))
	h.step()
	if used := h.s.Ledger.ActiveTimeUsed.Duration; used != 5*time.Second || h.s.Ledger.ActiveTimeReserved.Duration != 0 {
		t.Fatalf("active time used %s reserved %s; want 5s and nothing reserved", used, h.s.Ledger.ActiveTimeReserved.Duration)
	}
	until := t0.Add(5*time.Second + 10*time.Minute)
	if at, ok := Wakeup(h.s, env); !ok || !at.Equal(until) {
		t.Fatalf("Wakeup %s %v, want %s", at, ok, until)
	}
	conds := Conditions(h.s, 1, h.now)
	if !hasCondition(conds, exagentv1.ConditionWaiting, "z1 (sleep) until") {
		t.Fatalf("no Waiting condition naming the call: %+v", conds)
	}
	if _, _, err := Claim(h.s, env, "worker-2", h.now); !IsKind(err, KindNotPending) {
		t.Fatalf("Claim of a Waiting run: %v, want NotPending", err)
	}

	cases := []struct {
		at      time.Time
		changed bool
	}{
		{until.Add(-time.Second), false},
		{until, true},
	}
	s := h.s
	for _, tc := range cases {
		next, changed, err := Wake(s, env, tc.at)
		if err != nil || changed != tc.changed {
			t.Fatalf("Wake at %s: changed %v err %v, want %v", tc.at, changed, err, tc.changed)
		}
		if !changed && next.Phase != exagentv1.PhaseWaiting {
			t.Fatalf("an early Wake moved the run to %s", next.Phase)
		}
		s = next
	}
	want := "slept 10m0s (woke at " + until.Format(time.RFC3339) + ")"
	if got := outcomeOf(t, s, "z1"); got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
	if s.Phase != exagentv1.PhaseQueued || s.Reason != exagentv1.ReasonWoken {
		t.Fatalf("after Wake: phase %s reason %s, want Queued Woken", s.Phase, s.Reason)
	}
	if s.Ledger.ActiveTimeUsed.Duration != 5*time.Second {
		t.Fatalf("the wait was charged: active time used %s", s.Ledger.ActiveTimeUsed.Duration)
	}
	h.s, h.now = s, until
	h.claim("worker-2")
	act := h.step()
	if act.Kind != ActCallModel {
		t.Fatalf("after the wake: %s, want CallModel", act.Kind)
	}
	last := act.Model.Messages[len(act.Model.Messages)-1]
	if last.Role != exagentv1.RoleTool || last.ToolCallID != "z1" || last.Content != want {
		t.Fatalf("the model sees %+v, want the tool result %q", last, want)
	}
}

func hasCondition(cs []metav1.Condition, typ, msg string) bool {
	for _, c := range cs {
		if c.Type == typ && c.Status == "True" && strings.Contains(c.Message, msg) {
			return true
		}
	}
	return false
}

// TestSleepWithIO: a step with a Sleep and a tool call runs the tool (only
// the tool is dispatched), then waits; a RecordOutcome for the waiting call
// is refused.
func TestSleepWithIO(t *testing.T) {
	env := mustEnv(t, sleepAgent(false).Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(sleepFor("z1", `"1m"`), call("s1", "search", `{"q":"x"}`)))
	act := h.step()
	if act.Kind != ActRunTools || len(act.Calls) != 1 || act.Calls[0].CallID != "s1" {
		t.Fatalf("action %s %+v, want RunTools(s1) only", act.Kind, act.Calls)
	}
	if _, err := RecordOutcome(h.s, env, h.f, ToolResult{CallID: "z1", Kind: ResultSucceeded}, h.now); !IsKind(err, KindNotPending) {
		t.Fatalf("RecordOutcome of a waiting call: %v, want NotPending", err)
	}
	h.advance(10 * time.Second)
	h.outcome("s1", ResultSucceeded, "found")
	if act := h.step(); act.Kind != ActWaitUntil || !act.WakeAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("action %s at %s, want WaitUntil t0+1m", act.Kind, act.WakeAt)
	}
	// Woken late: the result says how long it really slept.
	s, changed, err := Wake(h.s, env, t0.Add(2*time.Minute))
	if err != nil || !changed || s.Phase != exagentv1.PhaseQueued {
		t.Fatalf("Wake: %v %v phase %s", changed, err, s.Phase)
	}
	if got := outcomeOf(t, s, "z1"); !strings.HasPrefix(got, "slept 2m0s (woke at ") {
		t.Fatalf("result %q", got)
	}
	if got := outcomeOf(t, s, "s1"); got != "found" {
		t.Fatalf("the tool's result changed: %q", got)
	}
}

// TestSleepEnds: a Waiting run is cancelled at once, and expires at its
// deadline (not before); either way its waiting call fails, telling since
// when it waited, never Uncertain. Wake past the deadline leaves it to Expire.
func TestSleepEnds(t *testing.T) {
	deadline := t0.Add(time.Hour)
	env := mustEnv(t, sleepAgent(false).Spec(), MakeRun().Deadline(deadline).Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(sleepFor("z1", `"2h"`)))
	h.step()
	if h.s.Phase != exagentv1.PhaseWaiting {
		t.Fatalf("phase %s, want Waiting", h.s.Phase)
	}
	waitingRun := h.s

	end := map[string]struct {
		do     func(Status) (Status, error)
		phase  exagentv1.RunPhase
		reason string
	}{
		"cancel": {do: func(s Status) (Status, error) {
			st, _, err := Cancel(s, env, DecisionCmd{OperationID: "c-1", Decision: exagentv1.DecisionCancel,
				Actor: actor("alice"), Reason: "stop"}, t0.Add(time.Minute))
			return st, err
		}, phase: exagentv1.PhaseCancelled, reason: exagentv1.ReasonCancelled},
		"expire at the deadline": {do: func(s Status) (Status, error) {
			if _, changed, err := Expire(s, env, deadline.Add(-time.Second)); err != nil || changed {
				t.Fatalf("Expire before the deadline: %v %v", changed, err)
			}
			if _, changed, err := Wake(s, env, deadline); err != nil || changed {
				t.Fatalf("Wake at the deadline: %v %v, want it left to Expire", changed, err)
			}
			st, changed, err := Expire(s, env, deadline)
			if !changed {
				t.Fatalf("Expire at the deadline changed nothing")
			}
			return st, err
		}, phase: exagentv1.PhaseExpired, reason: exagentv1.ReasonDeadlineExceeded},
	}
	for name, tc := range end {
		t.Run(name, func(t *testing.T) {
			s, err := tc.do(waitingRun)
			if err != nil {
				t.Fatal(err)
			}
			if s.Phase != tc.phase || s.Reason != tc.reason {
				t.Fatalf("phase %s reason %s, want %s %s", s.Phase, s.Reason, tc.phase, tc.reason)
			}
			c := s.Calls[findCall(&s, "z1")]
			if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "ended while the call waited") {
				t.Fatalf("call %s %+v, want Failed", c.State, c.Outcome)
			}
			if _, ok := Wakeup(s, env); ok {
				t.Fatalf("an ended run still has a wakeup")
			}
			if err := validateContinuation(&s); err != nil {
				t.Fatalf("integrity: %v", err)
			}
		})
	}
}

// TestSleepAsk: an Ask rule pauses a Sleep for approval before it waits;
// approved, the wait begins when a worker begins it, not when asked.
func TestSleepAsk(t *testing.T) {
	env := mustEnv(t, sleepAgent(true).Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(sleepFor("z1", `"10m"`)))
	if act := h.step(); act.Kind != ActPause || h.s.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("action %s phase %s, want Pause", act.Kind, h.s.Phase)
	}
	if c := h.s.Calls[findCall(&h.s, "z1")]; c.Wait != nil {
		t.Fatalf("a wait began before its approval: %+v", c.Wait)
	}
	h.advance(time.Hour)
	h.approveAll()
	h.claim("worker-2")
	act := h.step()
	if act.Kind != ActWaitUntil || !act.WakeAt.Equal(t0.Add(time.Hour+10*time.Minute)) {
		t.Fatalf("action %s at %s, want WaitUntil an hour and 10m after t0", act.Kind, act.WakeAt)
	}
}

// TestSleepNotIO: NotStarted takes back IO that never left; a wait sent
// nothing, and is refused.
func TestSleepNotIO(t *testing.T) {
	env := mustEnv(t, sleepAgent(false).Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(sleepFor("z1", `"1m"`), call("s1", "search", `{"q":"x"}`)))
	h.step()
	if _, err := NotStarted(h.s, env, h.f, "z1", h.now); !IsKind(err, KindNotPending) {
		t.Fatalf("NotStarted of a waiting call: %v, want NotPending", err)
	}
	if _, err := NotStarted(h.s, env, h.f, "s1", h.now); err != nil {
		t.Fatalf("NotStarted of the tool call: %v", err)
	}
}

// TestSleepHeldMaxWait: the run journals maxWait at its first claim; an
// Agent edit that lengthens it does not lengthen the run's waits, one that
// shortens it does.
func TestSleepHeldMaxWait(t *testing.T) {
	cases := map[string]struct {
		first, edited exagentv1.Duration
		duration      string
		fails         bool
	}{
		"raised: the journaled bound holds": {first: "2h", edited: "10h", duration: `"5h"`, fails: true},
		"raised to Never: still held":       {first: "2h", edited: exagentv1.Never, duration: `"5h"`, fails: true},
		"lowered: the current bound holds":  {first: "10h", edited: "1h", duration: `"5h"`, fails: true},
		"within both":                       {first: "10h", edited: "6h", duration: `"5h"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, mustEnv(t, sleepAgent(false).MaxWait(tc.first).Spec(), MakeRun().Spec())).claim(w1)
			if h.s.Limits == nil || h.s.Limits.MaxWait == nil {
				t.Fatalf("status.limits.maxWait not journaled: %+v", h.s.Limits)
			}
			h.step()
			h.respond(tools(sleepFor("z1", tc.duration)))
			h.env = mustEnv(t, sleepAgent(false).MaxWait(tc.edited).Spec(), MakeRun().Spec())
			h.step()
			if got := h.callState("z1") == exagentv1.CallFailed; got != tc.fails {
				t.Fatalf("call %s, want failed=%v", h.callState("z1"), tc.fails)
			}
		})
	}
}
