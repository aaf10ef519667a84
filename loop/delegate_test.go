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

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

func delegatingAgent() *fixture.AgentWrapper {
	return MakeAgent().AgentTool("delegate", "helper").HTTPTool("search", false).Default(exagentv1.PolicyAllow)
}

// delegating has delegation call d1 Started by attempt 1, its child not yet recorded.
func delegating(t testing.TB, env *Env) *harness {
	t.Helper()
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("d1", "delegate", `{"input":"help me"}`)))
	if act := h.step(); act.Kind != ActRunTools {
		t.Fatalf("fixture delegating: action %s, want RunTools", describe(act))
	}
	return h
}

// d1Child is the name of the child of delegation call d1 of the run.
var d1Child = ChildName("run", runUID, "d1")

// awaiting has d1's child recorded and the run handed back while it works.
func awaiting(t testing.TB, env *Env) *harness {
	t.Helper()
	h := delegating(t, env)
	h.must("RecordDelegated", func() error {
		s, err := RecordDelegated(h.s, env, h.f, "d1", ChildRef{Name: d1Child, UID: "child-uid", Agent: "helper"}, h.now)
		h.s = s
		return err
	})
	if act := h.step(); act.Kind != ActAwaitChildren {
		t.Fatalf("fixture awaiting: action %s, want AwaitChildren", describe(act))
	}
	return h
}

func TestChildName(t *testing.T) {
	long := strings.Repeat("a", 80)
	tests := map[string]struct {
		parent, call string
		wantPrefix   string
	}{
		"a short parent keeps its name": {parent: "triage-42", call: "c1", wantPrefix: "triage-42-"},
		"a long parent is cut to fit":   {parent: long, call: "c1", wantPrefix: strings.Repeat("a", 52) + "-"},
		"a trailing separator is cut":   {parent: strings.Repeat("b", 51) + "-x", call: "c1", wantPrefix: strings.Repeat("b", 51) + "-"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ChildName(tc.parent, "uid-p", tc.call)
			if len(got) > 63 || !strings.HasPrefix(got, tc.wantPrefix) || strings.Contains(got, "--") {
				t.Errorf("ChildName = %q (%d chars), want ≤63 starting %q", got, len(got), tc.wantPrefix)
			}
			if again := ChildName(tc.parent, "uid-p", tc.call); again != got {
				t.Errorf("not deterministic: %q then %q", got, again)
			}
			if other := ChildName(tc.parent, "uid-p", tc.call+"x"); other == got {
				t.Errorf("two calls name the same child %q", got)
			}
			if legacy := LegacyChildName(tc.parent, tc.call); len(legacy) > 63 || !strings.HasPrefix(legacy, tc.wantPrefix) {
				t.Errorf("LegacyChildName = %q", legacy)
			}
		})
	}
	if v := exagentv1.LabelValue(long); len(v) > 63 || v == exagentv1.LabelValue(long+"b") {
		t.Errorf("exagentv1.LabelValue(long) = %q", v)
	}
}

// TestChildNameLongParents: two parents whose long names share the part
// that is kept, with the same call id, name different children (the old
// scheme, hashing the call id alone, gave both the same name).
func TestChildNameLongParents(t *testing.T) {
	a, b := strings.Repeat("p", 60)+"-east", strings.Repeat("p", 60)+"-west"
	if x, y := ChildName(a, "uid-a", "call_1"), ChildName(b, "uid-b", "call_1"); x == y {
		t.Errorf("parents %s and %s name the same child %q", a, b, x)
	}
	if x, y := ChildName("same", "uid-1", "c"), ChildName("same", "uid-2", "c"); x == y {
		t.Errorf("two runs of one name (a run re-created) name the same child %q", x)
	}
	if LegacyChildName(a, "call_1") != LegacyChildName(b, "call_1") {
		t.Error("the legacy scheme is expected to collide here (it is what ChildName fixes)")
	}
}

func TestPlanChild(t *testing.T) {
	deadline := metav1.NewTime(t0.Add(time.Hour))
	parentOf := &exagentv1.Delegation{
		Parent: exagentv1.RunReference{Name: "root", UID: "root-uid"}, Root: exagentv1.RunReference{Name: "root", UID: "root-uid"},
		CallID: "c0", Ancestry: []string{"root-uid/c0"},
		Limits: exagentv1.DelegatedLimits{MaxToolCalls: new(int32(3)), MaxDepth: new(int32(2))},
	}
	tests := map[string]struct {
		agent       *exagentv1.AgentSpec
		run         *exagentv1.AgentRunSpec
		after       time.Duration // between the intent and the plan
		wantRefusal string
		check       func(t *testing.T, p ChildPlan)
	}{
		"a root's child: input, labels, tree, the parent's identity and clocks": {
			agent: delegatingAgent().Spec(),
			run: func() *exagentv1.AgentRunSpec {
				r := MakeRun().Spec()
				r.Deadline, r.ServiceAccountName, r.ActiveTimeLimit = &deadline, "bot", exagentv1.Never
				return r
			}(),
			check: func(t *testing.T, p ChildPlan) {
				want := exagentv1.AgentRunSpec{
					AgentRef: exagentv1.LocalObjectReference{Name: "helper"}, Input: "help me", Deadline: &deadline,
					ServiceAccountName: "bot", RequestedBy: &exagentv1.Actor{Username: "requester"},
					Delegation: &exagentv1.Delegation{
						Parent: exagentv1.RunReference{Name: "run", UID: runUID}, Root: exagentv1.RunReference{Name: "run", UID: runUID},
						CallID: "d1", Ancestry: []string{runUID + "/d1"},
						Limits: exagentv1.DelegatedLimits{MaxDepth: new(int32(2)), MaxRuns: new(int32(31))},
					},
				}
				if diff := cmp.Diff(want, p.Spec); diff != "" {
					t.Errorf("spec (-want +got):\n%s", diff)
				}
				if p.Name != d1Child || p.Labels[exagentv1.LabelParentRun] != "run" || p.Labels[exagentv1.LabelRootRun] != "run" {
					t.Errorf("name %q labels %v", p.Name, p.Labels)
				}
			},
		},
		"what remains of every limit, reserved for the one child": {
			agent: delegatingAgent().MaxSteps(10).MaxToolCalls(5).MaxTokens(100).Spec(),
			run:   MakeRun().ActiveTimeLimit("10m").Spec(),
			check: func(t *testing.T, p ChildPlan) {
				// One request (15 tokens) and one tool call (the delegation) are
				// charged; one request is kept for the run to read the answer; the
				// child is one run of the default 32 and may create the rest.
				want := exagentv1.DelegatedLimits{MaxSteps: new(int32(8)), MaxToolCalls: new(int32(4)), MaxTokens: new(int64(85)),
					MaxDepth: new(int32(2)), MaxRuns: new(int32(31))}
				if diff := cmp.Diff(want, p.Spec.Delegation.Limits); diff != "" {
					t.Errorf("limits (-want +got):\n%s", diff)
				}
				if p.Spec.ActiveTimeLimit != "10m0s" {
					t.Errorf("activeTimeLimit = %q, want the 10m0s left", p.Spec.ActiveTimeLimit)
				}
			},
		},
		"a grandchild: the chain grows, the root stays, the ancestors' limits narrow": {
			agent: delegatingAgent().MaxToolCalls(10).Spec(),
			run:   func() *exagentv1.AgentRunSpec { r := MakeRun().Spec(); r.Delegation = parentOf; return r }(),
			check: func(t *testing.T, p ChildPlan) {
				d := p.Spec.Delegation
				if diff := cmp.Diff([]string{"root-uid/c0", runUID + "/d1"}, d.Ancestry); diff != "" {
					t.Errorf("ancestry (-want +got):\n%s", diff)
				}
				if d.Root.Name != "root" || p.Labels[exagentv1.LabelRootRun] != "root" {
					t.Errorf("root = %+v, labels %v", d.Root, p.Labels)
				}
				if *d.Limits.MaxToolCalls != 2 || *d.Limits.MaxDepth != 1 {
					t.Errorf("limits = %d tool calls, depth %d; want min(10, 3)-1 = 2 and 2-1 = 1", *d.Limits.MaxToolCalls, *d.Limits.MaxDepth)
				}
			},
		},
		"no active time left: refused, the model is told": {
			agent:       delegatingAgent().Spec(),
			run:         MakeRun().ActiveTimeLimit("2s").Spec(),
			after:       time.Second + time.Millisecond,
			wantRefusal: exagentv1.ReasonLimitExceeded,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := mustEnv(t, tc.agent, tc.run)
			h := delegating(t, env)
			p, refusal, err := PlanChild(h.s, env, "d1", h.now.Add(tc.after))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantRefusal != "" {
				if !strings.Contains(refusal, tc.wantRefusal) {
					t.Errorf("refusal = %q, want %s", refusal, tc.wantRefusal)
				}
				return
			}
			if refusal != "" {
				t.Fatalf("refused: %s", refusal)
			}
			tc.check(t, p)
		})
	}
}

// TestMaxDepthRefusesDelegation: with no depth left, a delegation call
// fails before any IO with MaxDepthExceeded and the model goes on.
func TestMaxDepthRefusesDelegation(t *testing.T) {
	run := MakeRun().Spec()
	run.Delegation = &exagentv1.Delegation{Parent: exagentv1.RunReference{Name: "p", UID: "p-uid"},
		Root: exagentv1.RunReference{Name: "p", UID: "p-uid"}, CallID: "c", Ancestry: []string{"p-uid/c"},
		Limits: exagentv1.DelegatedLimits{MaxDepth: new(int32(0))}}
	env := mustEnv(t, delegatingAgent().Spec(), run)
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("d1", "delegate", `{"input":"deeper"}`)))
	if act := h.step(); act.Kind != ActCallModel {
		t.Fatalf("action %s, want the next model request", describe(act))
	}
	c := h.s.Calls[0]
	if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, exagentv1.ReasonMaxDepthExceeded) {
		t.Errorf("call = %s %+v, want Failed MaxDepthExceeded", c.State, c.Outcome)
	}
	if h.s.Ledger.ToolCalls != 0 {
		t.Errorf("tool calls charged = %d, want 0", h.s.Ledger.ToolCalls)
	}
}

// TestAwaitChildren: once the child is recorded the run holds no claim,
// shows the wait, and cannot be recovered (it has no owner to lose).
func TestAwaitChildren(t *testing.T) {
	env := mustEnv(t, delegatingAgent().Spec(), MakeRun().Spec())
	h := awaiting(t, env)
	s := h.s
	if s.Claim != nil || s.Phase != exagentv1.PhaseRunning || s.Reason != exagentv1.ReasonWaitingForChildren || !AwaitingChildren(s) {
		t.Fatalf("phase %s reason %s claim %v, want Running WaitingForChildren unclaimed", s.Phase, s.Reason, s.Claim)
	}
	if c := s.Calls[0]; c.State != exagentv1.CallStarted || c.Child != d1Child {
		t.Errorf("call = %s child %q, want Started with its child", c.State, c.Child)
	}
	if _, err := Recover(s, env, h.now.Add(time.Hour)); !wantErrKind(t, err, KindNotPending) {
		t.Error("a run waiting for its children was recovered")
	}
	if _, _, err := Claim(s, env, "w2", h.now); err == nil {
		t.Error("a run waiting for its children was claimed")
	}
}

func TestObserveChildren(t *testing.T) {
	child := func(phase exagentv1.RunPhase, mutate ...func(*exagentv1.AgentRunStatus)) map[string]ChildObservation {
		st := &exagentv1.AgentRunStatus{Phase: phase, Message: "child says " + string(phase)}
		for _, m := range mutate {
			m(st)
		}
		return map[string]ChildObservation{d1Child: {UID: "child-uid", Status: st}}
	}
	tests := map[string]struct {
		obs         map[string]ChildObservation
		wantPhase   exagentv1.RunPhase
		wantReason  string
		wantCall    exagentv1.CallState
		wantResult  string
		wantEvents  []ChildEventKind
		wantPending int32
		wantLedger  exagentv1.Ledger
	}{
		"a working child: the run waits": {
			obs: child(exagentv1.PhaseRunning), wantPhase: exagentv1.PhaseRunning, wantReason: exagentv1.ReasonWaitingForChildren,
			wantCall: exagentv1.CallStarted,
		},
		"a child waiting for a human: the run mirrors it": {
			obs: child(exagentv1.PhaseAwaitingApproval, func(s *exagentv1.AgentRunStatus) {
				s.PendingApprovals = 1
				s.Children = []exagentv1.ChildRun{{Name: "gc", CallID: "x", Phase: exagentv1.PhaseAwaitingApproval, PendingApprovals: 2}}
			}),
			wantPhase: exagentv1.PhaseAwaitingApproval, wantReason: exagentv1.ReasonChildAwaitingApproval,
			wantCall: exagentv1.CallStarted, wantEvents: []ChildEventKind{ChildPaused}, wantPending: 3,
		},
		"an Uncertain child: the run waits Uncertain": {
			obs: child(exagentv1.PhaseUncertain), wantPhase: exagentv1.PhaseUncertain, wantReason: exagentv1.ReasonChildUncertain,
			wantCall: exagentv1.CallStarted,
		},
		"a Succeeded child: its output, its usage charged, the run goes on": {
			obs: child(exagentv1.PhaseSucceeded, func(s *exagentv1.AgentRunStatus) {
				s.Output = "all fixed"
				s.Ledger = exagentv1.Ledger{Requests: 2, ToolCalls: 1, PromptTokens: 20, CompletionTokens: 10, CostNanos: 700}
			}),
			wantPhase: exagentv1.PhaseQueued, wantReason: exagentv1.ReasonChildrenEnded, wantCall: exagentv1.CallSucceeded,
			wantResult: "all fixed", wantEvents: []ChildEventKind{ChildEnded},
			// The child's tokens and cost are charged and marked as the
			// child's: an AgentBudget counts the parent's own usage apart.
			wantLedger: exagentv1.Ledger{Requests: 3, ChildRequests: 2, Runs: 1, ToolCalls: 2, PromptTokens: 30, CompletionTokens: 15,
				CostNanos: 700, ChildTokens: 30, ChildCostNanos: 700},
		},
		"a Failed child: a failed outcome with its reason": {
			obs: child(exagentv1.PhaseFailed, func(s *exagentv1.AgentRunStatus) {
				s.Reason = exagentv1.ReasonLimitExceeded
				s.Ledger = exagentv1.Ledger{Requests: 1}
			}),
			wantPhase: exagentv1.PhaseQueued, wantReason: exagentv1.ReasonChildrenEnded, wantCall: exagentv1.CallFailed,
			wantResult: "ended Failed (LimitExceeded)", wantEvents: []ChildEventKind{ChildEnded},
			wantLedger: exagentv1.Ledger{Requests: 2, ChildRequests: 1, Runs: 1, ToolCalls: 1, PromptTokens: 10, CompletionTokens: 5},
		},
		"a deleted child: a failed outcome, nothing known to charge but the run itself": {
			obs:       map[string]ChildObservation{d1Child: {Missing: true}},
			wantPhase: exagentv1.PhaseQueued, wantReason: exagentv1.ReasonChildrenEnded, wantCall: exagentv1.CallFailed,
			wantResult: exagentv1.ReasonChildRunMissing, wantEvents: []ChildEventKind{ChildEnded},
			wantLedger: exagentv1.Ledger{Requests: 1, Runs: 1, ToolCalls: 1, PromptTokens: 10, CompletionTokens: 5},
		},
		"a child re-created by someone else: never taken for the child": {
			obs: map[string]ChildObservation{d1Child: {UID: "other", Status: &exagentv1.AgentRunStatus{
				Phase: exagentv1.PhaseSucceeded, Output: "not mine", Ledger: exagentv1.Ledger{Requests: 9}}}},
			wantPhase: exagentv1.PhaseQueued, wantReason: exagentv1.ReasonChildrenEnded, wantCall: exagentv1.CallFailed,
			wantResult: "replaced", wantEvents: []ChildEventKind{ChildEnded},
			wantLedger: exagentv1.Ledger{Requests: 1, Runs: 1, ToolCalls: 1, PromptTokens: 10, CompletionTokens: 5},
		},
		"a run of the child's name that is not this run's child (the controller says Foreign)": {
			obs:       map[string]ChildObservation{d1Child: {UID: "child-uid", Foreign: true}},
			wantPhase: exagentv1.PhaseQueued, wantReason: exagentv1.ReasonChildrenEnded, wantCall: exagentv1.CallFailed,
			wantResult: "replaced", wantEvents: []ChildEventKind{ChildEnded},
			wantLedger: exagentv1.Ledger{Requests: 1, Runs: 1, ToolCalls: 1, PromptTokens: 10, CompletionTokens: 5},
		},
		"an ended child whose own children are not settled: its ledger is not final, the call stays open": {
			obs: child(exagentv1.PhaseFailed, func(s *exagentv1.AgentRunStatus) {
				s.Ledger = exagentv1.Ledger{Requests: 1}
				s.Children = []exagentv1.ChildRun{{Name: "gc", CallID: "x", Phase: exagentv1.PhaseRunning}}
			}),
			wantPhase: exagentv1.PhaseRunning, wantReason: exagentv1.ReasonWaitingForChildren, wantCall: exagentv1.CallStarted,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := mustEnv(t, delegatingAgent().Spec(), MakeRun().Spec())
			h := awaiting(t, env)
			before := h.s.Ledger
			next, events, err := ObserveChildren(h.s, env, tc.obs, h.now)
			if err != nil {
				t.Fatal(err)
			}
			if next.Phase != tc.wantPhase || next.Reason != tc.wantReason {
				t.Errorf("phase %s (%s: %s), want %s (%s)", next.Phase, next.Reason, next.Message, tc.wantPhase, tc.wantReason)
			}
			c := next.Calls[0]
			if c.State != tc.wantCall || (tc.wantResult != "" && !strings.Contains(c.Outcome.Result, tc.wantResult)) {
				t.Errorf("call %s %+v, want %s with %q", c.State, c.Outcome, tc.wantCall, tc.wantResult)
			}
			var kinds []ChildEventKind
			for _, e := range events {
				kinds = append(kinds, e.Kind)
			}
			if diff := cmp.Diff(tc.wantEvents, kinds); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := next.Children[0].PendingApprovals; got != tc.wantPending {
				t.Errorf("child pending approvals = %d, want %d", got, tc.wantPending)
			}
			want := tc.wantLedger
			if want == (exagentv1.Ledger{}) {
				want = before
			}
			want.ActiveTimeUsed, want.ActiveTimeReserved = next.Ledger.ActiveTimeUsed, next.Ledger.ActiveTimeReserved
			if diff := cmp.Diff(want, next.Ledger); diff != "" {
				t.Errorf("ledger (-want +got):\n%s", diff)
			}
			if tc.wantPhase == exagentv1.PhaseAwaitingApproval {
				conds := Conditions(next, 1, h.now)
				if c := findCondition(conds, exagentv1.ConditionAwaitingApproval); c == nil || c.Status != metav1.ConditionTrue {
					t.Errorf("AwaitingApproval condition = %+v, want True", c)
				}
			}
			if next.Phase == exagentv1.PhaseQueued {
				// Charged once: the run no longer waits, a second look changes nothing.
				if _, _, err := ObserveChildren(next, env, tc.obs, h.now); !wantErrKind(t, err, KindNotPending) {
					t.Error("an observed end was applied twice")
				}
			}
		})
	}
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// TestChildOutcomeResumes: after the child's end a worker claims the run
// and the model sees the child's output in the model's order.
func TestChildOutcomeResumes(t *testing.T) {
	env := mustEnv(t, delegatingAgent().Spec(), MakeRun().Spec())
	h := awaiting(t, env)
	next, _, err := ObserveChildren(h.s, env, map[string]ChildObservation{d1Child: {UID: "child-uid",
		Status: &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded, Output: "the answer"}}}, h.now)
	if err != nil {
		t.Fatal(err)
	}
	h.s = next
	h.claim("w2")
	act := h.step()
	if act.Kind != ActCallModel {
		t.Fatalf("action %s, want the next model request", describe(act))
	}
	last := h.s.History[len(h.s.History)-1]
	if last.Role != exagentv1.RoleTool || last.ToolCallID != "d1" || last.Content != "the answer" {
		t.Errorf("last message = %+v, want the child's output for d1", last)
	}
}

// TestDelegationIntentLost: an owner lost between the intent and the
// child's record leaves a call that is begun again — never Uncertain —
// under the same key, charged once.
func TestDelegationIntentLost(t *testing.T) {
	// No active-time limit: a lost owner's whole reservation would be charged.
	env := mustEnv(t, delegatingAgent().Spec(), MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	h := delegating(t, env)
	key := h.s.Calls[0].IdempotencyKey
	h.advance(2 * DefaultLeaseDuration)
	h.recover()
	if c := h.s.Calls[0]; c.State != exagentv1.CallAllowed || h.s.Phase != exagentv1.PhaseQueued {
		t.Fatalf("after recovery: call %s, phase %s; want Allowed, Queued", c.State, h.s.Phase)
	}
	h.claim("w2")
	act := h.step()
	if act.Kind != ActRunTools || len(act.Calls) != 1 || act.Calls[0].IdempotencyKey != key {
		t.Fatalf("action %s, want d1 begun again with key %s", describe(act), key)
	}
	if h.s.Ledger.ToolCalls != 1 {
		t.Errorf("tool calls charged = %d, want 1", h.s.Ledger.ToolCalls)
	}
}

// TestEndedParentClosesDelegation: a run that ends while its child works
// closes the call as failed (the child is cancelled with it), never
// Uncertain; the child itself ends Cancelled, ParentEnded, with its own
// call in flight Uncertain as in any cancel.
func TestEndedParentClosesDelegation(t *testing.T) {
	env := mustEnv(t, delegatingAgent().Spec(), MakeRun().Spec())
	h := awaiting(t, env)
	ended, err := Fail(h.s, exagentv1.ReasonDeadlineExceeded, "too late", h.now)
	if err != nil {
		t.Fatal(err)
	}
	if c := ended.Calls[0]; c.State != exagentv1.CallFailed {
		t.Errorf("delegation call of the ended parent = %s, want Failed", c.State)
	}

	_, childState := inFlightRun(t)
	cancelled, err := EndByParent(childState, defaultEnv(t), exagentv1.ReasonParentEnded,
		ParentEndedMessage("parent", exagentv1.PhaseCancelled), t0)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Phase != exagentv1.PhaseCancelled || cancelled.Reason != exagentv1.ReasonParentEnded || cancelled.Claim != nil {
		t.Errorf("child = %s (%s), claim %v; want Cancelled ParentEnded unclaimed", cancelled.Phase, cancelled.Reason, cancelled.Claim)
	}
	if cancelled.Calls[0].State != exagentv1.CallUncertain || cancelled.PendingApprovals != 0 {
		t.Errorf("child calls %+v, pending %d", cancelled.Calls, cancelled.PendingApprovals)
	}
}

// TestPayloadHashCoversAncestry: the same call in runs placed differently
// in a tree binds different payloads.
func TestPayloadHashCoversAncestry(t *testing.T) {
	agent := MakeAgent().HTTPTool("pay", false).Spec()
	hash := func(ancestry ...string) string {
		run := MakeRun().Spec()
		if len(ancestry) > 0 {
			run.Delegation = &exagentv1.Delegation{Ancestry: ancestry}
		}
		h, err := mustEnv(t, agent, run).payloadHash("pay", `{"amount":1}`)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	root, a, b := hash(), hash("r/c1"), hash("r/c2")
	if root == a || a == b {
		t.Errorf("payload hashes do not cover the ancestry: root %s, a %s, b %s", root, a, b)
	}
}

func TestAuthorizeAncestors(t *testing.T) {
	ancestor := func(approvers []string, forbidSelf bool) Ancestor {
		return Ancestor{
			Run: &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: "ns"},
				Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "triage"},
					RequestedBy: &exagentv1.Actor{Username: "carol"}}},
			Agent: &exagentv1.Agent{Spec: exagentv1.AgentSpec{Policy: exagentv1.PolicySpec{
				Approvers: &exagentv1.Approvers{Users: approvers}, ForbidSelfApproval: forbidSelf}}},
		}
	}
	tests := map[string]struct {
		ancestors  []Ancestor
		actor      string
		wantReason string
	}{
		"every ancestor allows":             {ancestors: []Ancestor{ancestor(nil, false), ancestor([]string{"alice"}, true)}, actor: "alice"},
		"an ancestor's approvers leave out": {ancestors: []Ancestor{ancestor(nil, false), ancestor([]string{"alice"}, false)}, actor: "bob", wantReason: exagentv1.ReasonNotAnApprover},
		"the root's requester decides":      {ancestors: []Ancestor{ancestor(nil, true)}, actor: "carol", wantReason: exagentv1.ReasonSelfApproval},
		"a root run has no ancestors":       {actor: "anyone"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ids := make([]Identities, len(tc.ancestors))
			err := AuthorizeAncestors(tc.ancestors, ids, actor(tc.actor))
			if tc.wantReason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := AsError(err)
			if !ok || e.Reason != tc.wantReason || !strings.Contains(e.Message, "ancestor run root") {
				t.Errorf("err = %v, want %s naming the ancestor", err, tc.wantReason)
			}
		})
	}
}

// TestBatchWaitsForEveryChild: two delegation calls in one batch; the run
// goes on only once both children ended, with both outcomes in the
// model's order and both usages charged.
func TestBatchWaitsForEveryChild(t *testing.T) {
	env := mustEnv(t, delegatingAgent().Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("d1", "delegate", `{"input":"one"}`), call("d2", "delegate", `{"input":"two"}`)))
	if act := h.step(); act.Kind != ActRunTools || len(act.Calls) != 2 {
		t.Fatalf("action %s, want both delegations begun", describe(act))
	}
	for _, id := range []string{"d2", "d1"} { // the children exist in any order
		h.must("RecordDelegated "+id, func() error {
			s, err := RecordDelegated(h.s, env, h.f, id, ChildRef{Name: ChildName("run", runUID, id), UID: "uid-" + id, Agent: "helper"}, h.now)
			h.s = s
			return err
		})
	}
	if act := h.step(); act.Kind != ActAwaitChildren {
		t.Fatalf("action %s, want AwaitChildren", describe(act))
	}
	ended := func(out string) *exagentv1.AgentRunStatus {
		return &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded, Output: out, Ledger: exagentv1.Ledger{Requests: 1}}
	}
	working := &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning}
	s, _, err := ObserveChildren(h.s, env, map[string]ChildObservation{
		ChildName("run", runUID, "d1"): {UID: "uid-d1", Status: working}, ChildName("run", runUID, "d2"): {UID: "uid-d2", Status: ended("second")}}, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase != exagentv1.PhaseRunning || !AwaitingChildren(s) {
		t.Fatalf("one child ended: phase %s (%s), want still waiting", s.Phase, s.Reason)
	}
	s, _, err = ObserveChildren(s, env, map[string]ChildObservation{
		ChildName("run", runUID, "d1"): {UID: "uid-d1", Status: ended("first")}, ChildName("run", runUID, "d2"): {UID: "uid-d2", Status: ended("second")}}, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase != exagentv1.PhaseQueued || s.Ledger.Requests != 3 {
		t.Fatalf("both ended: phase %s, requests %d; want Queued and 1+1+1", s.Phase, s.Ledger.Requests)
	}
	h.s = s
	h.claim("w2")
	h.step()
	var got []string
	for _, m := range h.s.History {
		if m.Role == exagentv1.RoleTool {
			got = append(got, m.ToolCallID+"="+m.Content)
		}
	}
	if diff := cmp.Diff([]string{"d1=first", "d2=second"}, got); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
}
