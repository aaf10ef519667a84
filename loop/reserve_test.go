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
	"fmt"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// fanOut has the run ask for n delegation calls d0…dn-1 in one turn and
// steps once: the calls are begun (or refused) together.
func fanOut(t *testing.T, env *Env, n int) (*harness, Action) {
	t.Helper()
	h := newHarness(t, env).claim(w1)
	h.step()
	var calls []exagentv1.MessageToolCall
	for i := range n {
		calls = append(calls, call(fmt.Sprintf("d%d", i), "delegate", fmt.Sprintf(`{"input":"part %d"}`, i)))
	}
	h.respond(tools(calls...))
	return h, h.step()
}

// withChildLimits is env with the child Agent "helper" limited to own.
func withChildLimits(t *testing.T, agent *exagentv1.AgentSpec, own exagentv1.LimitsSpec) *Env {
	t.Helper()
	env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", Agent: agent, AgentGeneration: 1, Run: MakeRun().Spec(),
		ChildLimits: map[string]exagentv1.LimitsSpec{"helper": own}})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestReserveChildren: delegation calls begun together reserve their
// children's budgets out of what the run has left; the sum of what they
// hold and what the run used never passes a limit, and a call for which
// nothing is left fails before any IO with LimitExceeded, uncharged.
func TestReserveChildren(t *testing.T) {
	tests := map[string]struct {
		agent       *exagentv1.AgentSpec
		own         exagentv1.LimitsSpec // the child Agent's limits
		calls       int
		wantRefused []string // the refused calls, each refusal naming the limit
		wantLimit   string
		check       func(t *testing.T, s Status)
	}{
		"eight children share the tokens left": {
			agent: delegatingAgent().MaxTokens(1000).Spec(), calls: 8,
			check: func(t *testing.T, s Status) {
				for _, e := range s.Children {
					// 985 tokens are left after the model's 15: a fair share each.
					if v := *e.Reserved.MaxTokens; v < 985/8 || v > 985/8+1 {
						t.Errorf("child %s reserved %d tokens, want about %d", e.Name, v, 985/8)
					}
				}
			},
		},
		"the child Agent's own limits cap its share": {
			agent: delegatingAgent().MaxTokens(1000).MaxToolCalls(20).Spec(), own: exagentv1.LimitsSpec{MaxTokens: new(int64(50)),
				MaxToolCalls: new(int32(1)), MaxRuns: new(int32(2))}, calls: 3,
			check: func(t *testing.T, s Status) {
				for _, e := range s.Children {
					if *e.Reserved.MaxTokens != 50 || *e.Reserved.MaxToolCalls != 1 || *e.Reserved.MaxRuns != 2 {
						t.Errorf("child %s reserved %+v, want its own Agent's 50 tokens, 1 tool call, 2 runs", e.Name, e.Reserved)
					}
				}
			},
		},
		"what is scarce goes to the first calls; one model request is kept for the run": {
			agent: delegatingAgent().MaxSteps(4).Spec(), calls: 3,
			wantRefused: []string{"d2"}, wantLimit: "maxSteps",
		},
		"maxRuns bounds the runs a tree may create": {
			agent: delegatingAgent().MaxRuns(3).Spec(), calls: 5,
			wantRefused: []string{"d3", "d4"}, wantLimit: "maxRuns",
			check: func(t *testing.T, s Status) {
				for _, e := range s.Children {
					if *e.Reserved.MaxRuns != 0 {
						t.Errorf("child %s may create %d runs, want 0 (the tree's 3 are the three children)", e.Name, *e.Reserved.MaxRuns)
					}
				}
			},
		},
		"maxRuns 0: no delegation at all": {
			agent: delegatingAgent().MaxRuns(0).Spec(), calls: 1,
			wantRefused: []string{"d0"}, wantLimit: "maxRuns",
		},
		"no tool call left is no refusal: the child may still answer": {
			agent: delegatingAgent().MaxToolCalls(2).Spec(), calls: 2,
			check: func(t *testing.T, s Status) {
				for _, e := range s.Children {
					if *e.Reserved.MaxToolCalls != 0 {
						t.Errorf("child %s reserved %d tool calls, want 0", e.Name, *e.Reserved.MaxToolCalls)
					}
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := withChildLimits(t, tc.agent, tc.own)
			h, _ := fanOut(t, env, tc.calls)
			s := h.s
			refused := map[string]bool{}
			for _, id := range tc.wantRefused {
				refused[id] = true
			}
			for i := range tc.calls {
				id := fmt.Sprintf("d%d", i)
				c := s.Calls[findCall(&s, id)]
				switch {
				case refused[id]:
					if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, exagentv1.ReasonLimitExceeded) ||
						!strings.Contains(c.Outcome.Result, tc.wantLimit) || c.IdempotencyKey != "" {
						t.Errorf("call %s = %s %+v (key %q), want Failed %s naming %s, never begun", id, c.State, c.Outcome,
							c.IdempotencyKey, exagentv1.ReasonLimitExceeded, tc.wantLimit)
					}
					if findChild(&s, id) >= 0 {
						t.Errorf("refused call %s journaled a child", id)
					}
				default:
					j := findChild(&s, id)
					if c.State != exagentv1.CallStarted || j < 0 || s.Children[j].Name != ChildName("run", runUID, id) ||
						s.Children[j].UID != "" || s.Children[j].Reserved == nil {
						t.Errorf("call %s = %s, entry %v: want Started with its child journaled (name, reservation, no uid yet)", id, c.State, j)
					}
				}
			}
			if got := s.Ledger.ToolCalls; got != int64(tc.calls-len(tc.wantRefused)) {
				t.Errorf("tool calls charged = %d, want the %d begun", got, tc.calls-len(tc.wantRefused))
			}
			assertWithinLimits(t, &s, env)
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

// assertWithinLimits: what the run used plus what its children hold stays
// within each of its limits (one model request kept for itself at a batch).
func assertWithinLimits(t *testing.T, s *Status, env *Env) {
	t.Helper()
	lim, h := env.limits(), held(s)
	if m := lim.MaxSteps; m != nil && stepsUsed(s)+1+h.steps > int64(*m)-1 {
		t.Errorf("steps: %d used + %d held > %d - 1", stepsUsed(s)+1, h.steps, *m)
	}
	if m := lim.MaxToolCalls; m != nil && s.Ledger.ToolCalls+h.toolCalls > int64(*m) {
		t.Errorf("tool calls: %d used + %d held > %d", s.Ledger.ToolCalls, h.toolCalls, *m)
	}
	if m := lim.MaxTokens; m != nil && tokensUsed(s)+h.tokens > *m {
		t.Errorf("tokens: %d used + %d held > %d", tokensUsed(s), h.tokens, *m)
	}
	if m := lim.MaxRuns; s.Ledger.Runs+h.runs > int64(*m) {
		t.Errorf("runs: %d created + %d held > %d", s.Ledger.Runs, h.runs, *m)
	}
}

// TestReservationReleasedAtEnd: a child's end releases its reservation and
// charges what it actually used, so the rest returns to the run.
func TestReservationReleasedAtEnd(t *testing.T) {
	env := mustEnv(t, delegatingAgent().MaxTokens(1000).MaxToolCalls(10).Spec(), MakeRun().Spec())
	h, _ := fanOut(t, env, 2)
	for _, id := range []string{"d0", "d1"} {
		h.must("RecordDelegated "+id, func() error {
			s, err := RecordDelegated(h.s, env, h.f, id, ChildRef{Name: ChildName("run", runUID, id), UID: "uid-" + id, Agent: "helper"}, h.now)
			h.s = s
			return err
		})
	}
	if act := h.step(); act.Kind != ActAwaitChildren {
		t.Fatalf("action %s, want AwaitChildren", describe(act))
	}
	r0, r1 := *h.s.Children[0].Reserved.MaxTokens, *h.s.Children[1].Reserved.MaxTokens
	if r0+r1 != 985 || held(&h.s).tokens != 985 {
		t.Fatalf("reserved %d + %d tokens (held %d), want the 985 left", r0, r1, held(&h.s).tokens)
	}
	obs := func(d0, d1 exagentv1.RunPhase) map[string]ChildObservation {
		return map[string]ChildObservation{
			ChildName("run", runUID, "d0"): {UID: "uid-d0", Status: &exagentv1.AgentRunStatus{Phase: d0,
				Ledger: exagentv1.Ledger{Requests: 2, ToolCalls: 1, PromptTokens: 80, CompletionTokens: 20, Runs: 2}}},
			ChildName("run", runUID, "d1"): {UID: "uid-d1", Status: &exagentv1.AgentRunStatus{Phase: d1,
				Ledger: exagentv1.Ledger{Requests: 1, PromptTokens: 30, CompletionTokens: 20}}},
		}
	}
	s, _, err := ObserveChildren(h.s, env, obs(exagentv1.PhaseSucceeded, exagentv1.PhaseRunning), h.now)
	if err != nil {
		t.Fatal(err)
	}
	if got := held(&s).tokens; got != r1 {
		t.Errorf("held after d0 ended = %d tokens, want only d1's %d", got, r1)
	}
	if got := tokensUsed(&s); got != 15+100 {
		t.Errorf("tokens used = %d, want 15 + the 100 d0 used (not the %d it held)", got, r0)
	}
	if l := s.Ledger; l.Runs != 3 || l.ChildRequests != 2 || l.ToolCalls != 3 {
		t.Errorf("ledger = %+v, want runs 3 (d0 and the 2 below it), childRequests 2, tool calls 2+1", l)
	}
	s, _, err = ObserveChildren(s, env, obs(exagentv1.PhaseSucceeded, exagentv1.PhaseFailed), h.now)
	if err != nil {
		t.Fatal(err)
	}
	if got := held(&s); got != (holding{}) {
		t.Errorf("held after both ended = %+v, want nothing", got)
	}
	if got := tokensUsed(&s); got != 15+100+50 || s.Ledger.Runs != 4 {
		t.Errorf("tokens used = %d, runs %d; want 165 and 4", got, s.Ledger.Runs)
	}
}

// TestReservationKeptWhenBegunAgain: an intent whose owner was lost is
// begun again with its entry: the same child name, the same reservation,
// no second entry.
func TestReservationKeptWhenBegunAgain(t *testing.T) {
	env := mustEnv(t, delegatingAgent().MaxTokens(500).Spec(), MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	h := delegating(t, env)
	before := *h.s.Children[0].DeepCopy()
	h.advance(2 * DefaultLeaseDuration)
	h.recover()
	h.claim("w2")
	if act := h.step(); act.Kind != ActRunTools {
		t.Fatalf("action %s, want d1 begun again", describe(act))
	}
	if len(h.s.Children) != 1 || h.s.Children[0].Name != before.Name || *h.s.Children[0].Reserved.MaxTokens != *before.Reserved.MaxTokens {
		t.Errorf("children = %+v, want the one entry %+v kept", h.s.Children, before)
	}
}

// TestLegacyIntentKeepsLegacyName: a delegation intent journaled by a
// version that recorded no child entry (and named children after the call
// id alone) is begun again under that old name, so the child it may have
// created is found, not doubled.
func TestLegacyIntentKeepsLegacyName(t *testing.T) {
	env := mustEnv(t, delegatingAgent().Spec(), MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	h := delegating(t, env)
	h.s.Children = nil // as the older version left it: key set, no entry
	h.advance(2 * DefaultLeaseDuration)
	h.recover()
	h.claim("w2")
	h.step()
	if len(h.s.Children) != 1 || h.s.Children[0].Name != LegacyChildName("run", "d1") {
		t.Fatalf("children = %+v, want the legacy name %s", h.s.Children, LegacyChildName("run", "d1"))
	}
	p, _, err := PlanChild(h.s, env, "d1", h.now)
	if err != nil || p.Name != LegacyChildName("run", "d1") {
		t.Errorf("plan = %q (%v), want the legacy name", p.Name, err)
	}
}

// TestTreeStepsBoundTheRun: the requests a child was charged count
// against the run's maxSteps with its own steps, so the tree never makes
// more model requests than the run's limit.
func TestTreeStepsBoundTheRun(t *testing.T) {
	env := mustEnv(t, delegatingAgent().MaxSteps(10).Spec(), MakeRun().Spec())
	h := awaiting(t, env)
	reserved := *h.s.Children[0].Reserved.MaxSteps
	if reserved != 8 {
		t.Fatalf("reserved %d steps, want 10 - 1 made - 1 kept = 8", reserved)
	}
	s, _, err := ObserveChildren(h.s, env, map[string]ChildObservation{d1Child: {UID: "child-uid",
		Status: &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded, Output: "done", Ledger: exagentv1.Ledger{Requests: int64(reserved)}}}}, h.now)
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	h.claim("w2")
	if act := h.step(); act.Kind != ActCallModel {
		t.Fatalf("the run's request to read the answer: %s, want CallModel", describe(act))
	}
	h.respond(tools(call("s1", "search", `{}`)))
	h.step()
	h.outcome("s1", ResultSucceeded, "ok")
	act := h.step()
	if act.Kind != ActFail || h.s.Reason != exagentv1.ReasonLimitExceeded || !strings.Contains(h.s.Message, "child runs") {
		t.Fatalf("third request: %s (%s: %s), want LimitExceeded counting the child's requests", describe(act), h.s.Reason, h.s.Message)
	}
	if total := h.s.Ledger.Requests; total != 10 {
		t.Errorf("tree requests = %d, want the limit 10", total)
	}
}

// TestWithdrawnCallNotBegunAgain: a delegation withdrawn while it waited
// to be begun again (here: its child ended and was charged while the call
// was asked again) fails when it is approved anew, instead of running a
// child on a reservation nobody holds any more.
func TestWithdrawnCallNotBegunAgain(t *testing.T) {
	agent := func(rule string) *exagentv1.AgentSpec {
		return delegatingAgent().Rule(rule, exagentv1.PolicyAsk, "", "delegate").Spec()
	}
	run := MakeRun().ActiveTimeLimit(exagentv1.Never).Spec()
	h := newHarness(t, mustEnv(t, agent("ask"), run)).claim(w1)
	h.step()
	h.respond(tools(call("d1", "delegate", `{"input":"help"}`)))
	h.step()
	h.approveAll()
	h.claim("w2")
	h.step()
	h.advance(2 * DefaultLeaseDuration)
	h.recover()
	h.env = mustEnv(t, agent("ask-again"), run)
	h.claim("w3")
	h.step() // asked again: the child is withdrawn
	name := h.s.Children[0].Name
	s, _ := WithdrawChildren(h.s, h.env, map[string]ChildObservation{name: {UID: "c", Status: &exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseCancelled, Ledger: exagentv1.Ledger{Requests: 1}}}})
	h.s = s
	h.approveAll()
	h.claim("w4")
	act := h.step()
	c := h.s.Calls[findCall(&h.s, "d1")]
	if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, exagentv1.ReasonDelegationWithdrawn) {
		t.Fatalf("d1 = %s %+v after %s, want Failed DelegationWithdrawn", c.State, c.Outcome, describe(act))
	}
	if act.Kind != ActCallModel || len(h.s.Children) != 1 {
		t.Errorf("action %s, children %d: want the model told, no second child", describe(act), len(h.s.Children))
	}
}
