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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// lostDelegation is delegating (d1 Started, its child journaled, not
// recorded) after its owner was lost: d1 is Allowed again, the run Queued.
func lostDelegation(t *testing.T, env *Env) *harness {
	t.Helper()
	h := delegating(t, env)
	h.advance(2 * DefaultLeaseDuration)
	h.recover()
	if c := h.callState("d1"); c != exagentv1.CallAllowed {
		t.Fatalf("fixture lostDelegation: d1 %s, want Allowed", c)
	}
	return h
}

// TestWithdrawnChildren: each way a run can stop awaiting a child it has
// not recorded — it ended (cancel while the Create was in flight, the
// deadline after its owner was lost), or the call was closed or asked
// again (denied after a re-ask, its tool removed) — withdraws the child:
// the call is never Uncertain, the child is to be ended, and its entry
// holds its reservation until the child ended and was charged.
func TestWithdrawnChildren(t *testing.T) {
	neverEnv := func(t *testing.T) *Env {
		return mustEnv(t, delegatingAgent().MaxTokens(400).Spec(), MakeRun().ActiveTimeLimit(exagentv1.Never).Deadline(t0.Add(time.Hour)).Spec())
	}
	tests := map[string]struct {
		build      func(t *testing.T) (*harness, Status, *Env) // the run, and the env its controller has now
		wantCall   exagentv1.CallState
		wantReason string
	}{
		"cancelled while the child's Create was in flight": {
			build: func(t *testing.T) (*harness, Status, *Env) {
				env := neverEnv(t)
				h := delegating(t, env)
				s, _, err := Cancel(h.s, env, DecisionCmd{OperationID: "stop", Actor: actor("alice")}, h.now)
				if err != nil {
					t.Fatal(err)
				}
				return h, s, env
			},
			wantCall: exagentv1.CallFailed, wantReason: exagentv1.ReasonParentEnded,
		},
		"the deadline passed after the owner was lost": {
			build: func(t *testing.T) (*harness, Status, *Env) {
				env := neverEnv(t)
				h := lostDelegation(t, env)
				s, changed, err := Expire(h.s, env, t0.Add(2*time.Hour))
				if err != nil || !changed {
					t.Fatalf("expire: %v, changed %v", err, changed)
				}
				return h, s, env
			},
			wantCall: exagentv1.CallAllowed, wantReason: exagentv1.ReasonParentEnded,
		},
		"asked again after the owner was lost, then denied (onDeny Continue)": {
			build: func(t *testing.T) (*harness, Status, *Env) {
				agent := func(rule string) *exagentv1.AgentSpec {
					return delegatingAgent().Rule(rule, exagentv1.PolicyAsk, "", "delegate").OnDeny(exagentv1.OnDenyContinue).Spec()
				}
				env := mustEnv(t, agent("ask"), MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
				h := newHarness(t, env).claim(w1)
				h.step()
				h.respond(tools(call("d1", "delegate", `{"input":"help"}`)))
				h.step()
				h.approveAll()
				h.claim("w2")
				if act := h.step(); act.Kind != ActRunTools {
					t.Fatalf("approved d1: %s, want begun", describe(act))
				}
				h.advance(2 * DefaultLeaseDuration)
				h.recover()
				// The policy changed meanwhile: the approval no longer covers d1.
				h.env = mustEnv(t, agent("ask-again"), MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
				h.claim("w3")
				if act := h.step(); act.Kind != ActPause {
					t.Fatalf("re-asked d1: %s, want Pause", describe(act))
				}
				if !Withdrawing(h.s, h.env) {
					t.Error("a re-asked delegation does not withdraw its child")
				}
				a := h.approvalFor("d1")
				h.decide(DecisionCmd{OperationID: "no", Decision: exagentv1.DecisionDeny, ApprovalID: a.ID,
					PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: actor("alice")})
				return h, h.s, h.env
			},
			wantCall: exagentv1.CallDenied, wantReason: exagentv1.ReasonDelegationWithdrawn,
		},
		"its tool removed from the Agent after the owner was lost": {
			build: func(t *testing.T) (*harness, Status, *Env) {
				env := neverEnv(t)
				h := lostDelegation(t, env)
				if Withdrawing(h.s, env) {
					t.Error("a call to be begun again withdrew its child")
				}
				standIn := mustEnv(t, &exagentv1.AgentSpec{}, MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
				if Withdrawing(h.s, standIn) {
					t.Error("an Env without the Agent (missing, unusable) withdrew a child")
				}
				removed := mustEnv(t, MakeAgent().HTTPTool("search", false).Default(exagentv1.PolicyAllow).Spec(),
					MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
				return h, h.s, removed
			},
			wantCall: exagentv1.CallAllowed, wantReason: exagentv1.ReasonDelegationWithdrawn,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, s, env := tc.build(t)
			if c := s.Calls[findCall(&s, "d1")]; c.State != tc.wantCall {
				t.Errorf("d1 = %s, want %s (a delegation call is never Uncertain)", c.State, tc.wantCall)
			}
			if !Withdrawing(s, env) {
				t.Fatal("the child is not withdrawn")
			}
			name := s.Children[0].Name
			// The child exists and works: it is to be ended, and still held.
			running := map[string]ChildObservation{name: {UID: "c-uid", Status: &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning}}}
			next, events := WithdrawChildren(s, env, running)
			if len(events) != 1 || events[0].Kind != ChildWithdrawn || events[0].Child != name || events[0].Reason != tc.wantReason {
				t.Fatalf("events = %+v, want %s withdrawn with %s", events, name, tc.wantReason)
			}
			if held(&next).runs == 0 || next.Children[0].Charged {
				t.Error("a withdrawn child that has not ended no longer holds its reservation")
			}
			// Once it ended: its usage is charged, the reservation released.
			ended := map[string]ChildObservation{name: {UID: "c-uid", Status: &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseCancelled,
				Ledger: exagentv1.Ledger{Requests: 1, PromptTokens: 40, CompletionTokens: 2}}}}
			next, _ = WithdrawChildren(next, env, ended)
			e := next.Children[0]
			if !e.Charged || held(&next) != (holding{}) || next.Ledger.ChildRequests != 1 || next.Ledger.Runs != 1 ||
				tokensUsed(&next) != tokensUsed(&s)+42 {
				t.Errorf("after the end: entry %+v, ledger %+v; want charged with the child's 1 request and 42 tokens", e, next.Ledger)
			}
			if Withdrawing(next, env) {
				t.Error("still withdrawing after the child was charged")
			}
			// A child that was never created: settled, nothing charged.
			gone, _ := WithdrawChildren(s, env, map[string]ChildObservation{name: {Missing: true}})
			if !gone.Children[0].Charged || gone.Ledger.Runs != s.Ledger.Runs || gone.Ledger.Requests != s.Ledger.Requests {
				t.Errorf("never created: entry %+v ledger %+v, want settled with nothing charged", gone.Children[0], gone.Ledger)
			}
			// A run of that name that is not this run's child is never ended.
			foreign, events := WithdrawChildren(s, env, map[string]ChildObservation{name: {UID: "x", Foreign: true,
				Status: &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning}}})
			if len(events) != 0 || !foreign.Children[0].Charged {
				t.Errorf("a foreign run of the child's name: events %+v, entry %+v; want none ended, entry settled", events, foreign.Children[0])
			}
		})
	}
}

// TestWithdrawnChildHoldsTheBatch: after a denied re-ask (onDeny
// Continue) the batch does not close while the withdrawn child works: the
// run waits unclaimed, then goes on once the child ended and was charged.
func TestWithdrawnChildHoldsTheBatch(t *testing.T) {
	env := mustEnv(t, delegatingAgent().Rule("ask", exagentv1.PolicyAsk, "", "delegate").OnDeny(exagentv1.OnDenyContinue).Spec(),
		MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("d1", "delegate", `{"input":"help"}`)))
	h.step()
	h.approveAll()
	h.claim("w2")
	h.step() // d1 begun, its child journaled
	h.advance(2 * DefaultLeaseDuration)
	h.recover()
	h.env = mustEnv(t, delegatingAgent().Rule("ask-again", exagentv1.PolicyAsk, "", "delegate").OnDeny(exagentv1.OnDenyContinue).Spec(),
		MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	h.claim("w3")
	h.step()
	a := h.approvalFor("d1")
	h.decide(DecisionCmd{OperationID: "no", Decision: exagentv1.DecisionDeny, ApprovalID: a.ID, PayloadHash: a.PayloadHash,
		Revision: a.Revision, Actor: actor("alice")})
	h.claim("w4")
	if act := h.step(); act.Kind != ActAwaitChildren || h.s.Claim != nil || !AwaitingChildren(h.s) {
		t.Fatalf("after the deny: %s, claim %v; want the run to wait for its withdrawn child", describe(act), h.s.Claim)
	}
	if !strings.Contains(h.s.Message, "withdrawn") {
		t.Errorf("message %q does not say the child is withdrawn", h.s.Message)
	}
	name := h.s.Children[0].Name
	s, _, err := ObserveChildren(h.s, h.env, map[string]ChildObservation{name: {UID: "c", Status: &exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseCancelled, Ledger: exagentv1.Ledger{Requests: 1}}}}, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase != exagentv1.PhaseQueued || AwaitingChildren(s) {
		t.Fatalf("after the child ended: %s (%s), want Queued for a worker", s.Phase, s.Message)
	}
	h.s = s
	h.claim("w5")
	if act := h.step(); act.Kind != ActCallModel {
		t.Fatalf("action %s, want the next model request", describe(act))
	}
	if last := h.s.History[len(h.s.History)-1]; !strings.Contains(last.Content, "Denied") {
		t.Errorf("the model sees %q, want the denial", last.Content)
	}
}

func TestCheckParent(t *testing.T) {
	const self = "parent-abc"
	d := &exagentv1.Delegation{Parent: exagentv1.RunReference{Name: "parent", UID: "p-uid"}, CallID: "d1"}
	parent := func(phase exagentv1.RunPhase, call exagentv1.ToolCall, children ...exagentv1.ChildRun) ParentView {
		return ParentView{UID: "p-uid", Status: &exagentv1.AgentRunStatus{Phase: phase, Calls: []exagentv1.ToolCall{call}, Children: children}}
	}
	started := exagentv1.ToolCall{ID: "d1", State: exagentv1.CallStarted}
	entry := exagentv1.ChildRun{Name: self, CallID: "d1"}
	tests := map[string]struct {
		view       ParentView
		want       ParentVerdictKind
		wantReason string
	}{
		"the parent awaits it (not recorded yet)": {view: parent(exagentv1.PhaseRunning, started, entry), want: ParentAwaits},
		"the parent recorded it":                  {view: parent(exagentv1.PhaseRunning, exagentv1.ToolCall{ID: "d1", State: exagentv1.CallStarted, Child: self}, entry), want: ParentAwaits},
		"an older version's intent (no entry)":    {view: parent(exagentv1.PhaseRunning, started), want: ParentAwaits},
		"the parent is gone":                      {view: ParentView{Missing: true}, want: ParentWithdrew, wantReason: exagentv1.ReasonParentEnded},
		"the parent was re-created": {view: func() ParentView { v := parent(exagentv1.PhaseRunning, started, entry); v.UID = "other"; return v }(),
			want: ParentWithdrew, wantReason: exagentv1.ReasonParentEnded},
		"the parent ended": {view: parent(exagentv1.PhaseCancelled, exagentv1.ToolCall{ID: "d1", State: exagentv1.CallFailed}, entry),
			want: ParentWithdrew, wantReason: exagentv1.ReasonParentEnded},
		"the parent's call is to be begun again": {view: parent(exagentv1.PhaseQueued, exagentv1.ToolCall{ID: "d1", State: exagentv1.CallAllowed}, entry),
			want: ParentResumes, wantReason: exagentv1.ReasonWaitingForParent},
		"the parent's call is asked again": {view: parent(exagentv1.PhaseAwaitingApproval, exagentv1.ToolCall{ID: "d1", State: exagentv1.CallPending}, entry),
			want: ParentWithdrew, wantReason: exagentv1.ReasonDelegationWithdrawn},
		"the parent's call was denied": {view: parent(exagentv1.PhaseApproved, exagentv1.ToolCall{ID: "d1", State: exagentv1.CallDenied}, entry),
			want: ParentWithdrew, wantReason: exagentv1.ReasonDelegationWithdrawn},
		"the parent's call is gone": {view: parent(exagentv1.PhaseRunning, exagentv1.ToolCall{ID: "other", State: exagentv1.CallStarted}, entry),
			want: ParentWithdrew, wantReason: exagentv1.ReasonDelegationWithdrawn},
		"the parent journaled another child": {view: parent(exagentv1.PhaseRunning, started, exagentv1.ChildRun{Name: "not-me", CallID: "d1"}),
			want: ParentWithdrew, wantReason: exagentv1.ReasonDelegationWithdrawn},
		"the parent settled the entry without it": {view: parent(exagentv1.PhaseRunning, started, exagentv1.ChildRun{Name: self, CallID: "d1", Charged: true}),
			want: ParentWithdrew, wantReason: exagentv1.ReasonDelegationWithdrawn},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := CheckParent(self, d, tc.view)
			if got.Kind != tc.want || got.Reason != tc.wantReason || (got.Kind != ParentAwaits && !strings.Contains(got.Message, "parent")) {
				t.Errorf("CheckParent = %+v, want %s (%s)", got, tc.want, tc.wantReason)
			}
		})
	}
}

// TestChildEndsItselfBeforeIO: a child whose parent withdrew it ends
// Cancelled before its claim; one whose parent resumes waits, unclaimed.
func TestChildEndsItselfBeforeIO(t *testing.T) {
	env := defaultEnv(t)
	s, err := Start(Status{}, env, t0)
	if err != nil {
		t.Fatal(err)
	}
	ended, err := EndByParent(s, env, exagentv1.ReasonParentEnded, ParentEndedMessage("parent", exagentv1.PhaseCancelled), t0)
	if err != nil || ended.Phase != exagentv1.PhaseCancelled || ended.Reason != exagentv1.ReasonParentEnded || ended.Ledger.Requests != 0 {
		t.Errorf("ended = %s (%s), requests %d, err %v; want Cancelled ParentEnded, nothing used", ended.Phase, ended.Reason, ended.Ledger.Requests, err)
	}
	if _, _, err := Claim(ended, env, w1, t0); err == nil {
		t.Error("a child its parent withdrew was claimed")
	}
	waiting, changed := WaitForParent(s, "waiting for its parent")
	if !changed || waiting.Phase != exagentv1.PhaseQueued || waiting.Reason != exagentv1.ReasonWaitingForParent {
		t.Errorf("waiting = %s (%s), changed %v", waiting.Phase, waiting.Reason, changed)
	}
	if _, again := WaitForParent(waiting, "waiting for its parent"); again {
		t.Error("saying the same wait twice is a change (a write)")
	}
}
