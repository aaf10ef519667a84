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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestApprove(t *testing.T) {
	env := defaultEnv(t)
	_, s := paused(t)
	a := s.Approvals[0]
	now := t0.Add(time.Hour)
	ok := approveCmd(t, s, "p1", "op-1", "alice")
	receipt := exagentv1.Receipt{OperationID: "op-1", DecisionName: "op-1", Decision: "Approve", Target: a.ID,
		PayloadHash: a.PayloadHash, Revision: 1, Actor: &exagentv1.Actor{Username: "alice"}, AppliedAt: secTimePtr(now)}
	with := func(mut func(*DecisionCmd)) DecisionCmd { d := ok; mut(&d); return d }
	strictEnv := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").
		Approvers("alice").ForbidSelf().Spec(), MakeRun().Spec())
	deadlineEnv := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
		MakeRun().Deadline(t0.Add(time.Minute)).Spec())

	cases := map[string]struct {
		s        Status
		env      *Env
		d        DecisionCmd
		now      time.Time
		want     func(*Status)
		wantKind ErrorKind
		wantMsg  string
	}{
		"approve": {s: s, env: env, d: ok, want: func(s *Status) {
			s.Approvals[0].State, s.Approvals[0].Decision = exagentv1.ApprovalApproved, "Approve"
			s.Approvals[0].Actor, s.Approvals[0].Reason = &exagentv1.Actor{Username: "alice"}, "ok"
			s.Calls[1].State = exagentv1.CallApproved
			s.PendingApprovals = 0
			s.Phase, s.Reason = exagentv1.PhaseApproved, exagentv1.ReasonApproved
			s.Message = "approval p1-r1 approved by alice; every approval is decided, waiting for a worker"
			s.Receipts = []exagentv1.Receipt{receipt}
		}},
		"listed approver": {s: s, env: strictEnv, d: ok, want: func(s *Status) {
			s.Approvals[0].State, s.Approvals[0].Decision = exagentv1.ApprovalApproved, "Approve"
			s.Approvals[0].Actor, s.Approvals[0].Reason = &exagentv1.Actor{Username: "alice"}, "ok"
			s.Calls[1].State = exagentv1.CallApproved
			s.PendingApprovals = 0
			s.Phase, s.Reason = exagentv1.PhaseApproved, exagentv1.ReasonApproved
			s.Message = "approval p1-r1 approved by alice; every approval is decided, waiting for a worker"
			s.Receipts = []exagentv1.Receipt{receipt}
		}},
		"operationID defaults to the name": {s: s, env: env, d: with(func(d *DecisionCmd) { d.OperationID = "" }), want: func(s *Status) {
			s.Approvals[0].State, s.Approvals[0].Decision = exagentv1.ApprovalApproved, "Approve"
			s.Approvals[0].Actor, s.Approvals[0].Reason = &exagentv1.Actor{Username: "alice"}, "ok"
			s.Calls[1].State = exagentv1.CallApproved
			s.PendingApprovals = 0
			s.Phase, s.Reason = exagentv1.PhaseApproved, exagentv1.ReasonApproved
			s.Message = "approval p1-r1 approved by alice; every approval is decided, waiting for a worker"
			s.Receipts = []exagentv1.Receipt{receipt}
		}},
		"no operation":        {s: s, env: env, d: with(func(d *DecisionCmd) { d.OperationID, d.Name = "", "" }), wantKind: KindConflict, wantMsg: "operationID"},
		"wrong decision kind": {s: s, env: env, d: with(func(d *DecisionCmd) { d.Decision = "Maybe" }), wantKind: KindConflict},
		"unlisted approver":   {s: s, env: strictEnv, d: with(func(d *DecisionCmd) { d.Actor = actor("mallory") }), wantKind: KindForbidden},
		"self approval":       {s: s, env: strictEnv, d: with(func(d *DecisionCmd) { d.Actor = actor("requester") }), wantKind: KindForbidden},
		"unknown approval":    {s: s, env: env, d: with(func(d *DecisionCmd) { d.ApprovalID = "nope" }), wantKind: KindNotPending},
		"old revision":        {s: s, env: env, d: with(func(d *DecisionCmd) { d.Revision = 0 }), wantKind: KindConflict, wantMsg: "revision"},
		"changed payload":     {s: s, env: env, d: with(func(d *DecisionCmd) { d.PayloadHash = "sha256:other" }), wantKind: KindConflict, wantMsg: "payloadHash"},
		"expired":             {s: s, env: env, d: ok, now: t0.Add(24 * time.Hour), wantKind: KindExpired, wantMsg: "expired"},
		"deadline passed":     {s: s, env: deadlineEnv, d: ok, now: t0.Add(time.Minute), wantKind: KindExpired, wantMsg: "deadline"},
		"already expired": {s: func() Status { s, _, _ := Expire(s, env, t0.Add(25*time.Hour)); return s }(), env: env, d: ok,
			wantKind: KindNotPending},
		"expired approval record": {s: func() Status {
			s := clone(s)
			s.Approvals[0].State = exagentv1.ApprovalExpired
			return s
		}(), env: env, d: ok, wantKind: KindExpired},
		"not awaiting": {s: running(t, env), env: env, d: ok, wantKind: KindNotPending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := tc.now
			if n.IsZero() {
				n = now
			}
			before := mustJSON(t, tc.s)
			got, r, err := Approve(tc.s, tc.env, tc.d, n)
			if mustJSON(t, tc.s) != before {
				t.Fatalf("input mutated")
			}
			if wantErrKind(t, err, tc.wantKind) {
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("error %q does not mention %q", err, tc.wantMsg)
				}
				return
			}
			want := clone(tc.s)
			tc.want(&want)
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(receipt, r); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			for _, c := range got.Calls {
				if c.State == exagentv1.CallStarted && c.Attempt != 1 {
					t.Errorf("approve started a call")
				}
			}
		})
	}
}

// TestDecisionIdempotency: the same operation returns its receipt and
// changes nothing; a variation under the same operationID, or a second
// decision on a decided approval, conflicts.
func TestDecisionIdempotency(t *testing.T) {
	env := defaultEnv(t)
	_, s := paused(t)
	first := approveCmd(t, s, "p1", "op-1", "alice")
	applied, receipt, err := Decide(s, env, first, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	with := func(mut func(*DecisionCmd)) DecisionCmd { d := first; mut(&d); return d }
	cases := map[string]struct {
		d        DecisionCmd
		wantKind ErrorKind
		wantMsg  string
	}{
		"same operation replays":   {d: first},
		"same operation later":     {d: first},
		"opposite decision":        {d: with(func(d *DecisionCmd) { d.Decision = exagentv1.DecisionDeny }), wantKind: KindConflict, wantMsg: "decision (Approve, now Deny)"},
		"different actor":          {d: with(func(d *DecisionCmd) { d.Actor = actor("bob") }), wantKind: KindConflict, wantMsg: "actor"},
		"changed payload":          {d: with(func(d *DecisionCmd) { d.PayloadHash = "sha256:x" }), wantKind: KindConflict, wantMsg: "payloadHash"},
		"changed revision":         {d: with(func(d *DecisionCmd) { d.Revision = 7 }), wantKind: KindConflict, wantMsg: "revision"},
		"changed target":           {d: with(func(d *DecisionCmd) { d.ApprovalID = "x" }), wantKind: KindConflict, wantMsg: "target"},
		"new operation, decided":   {d: with(func(d *DecisionCmd) { d.OperationID = "op-2" }), wantKind: KindNotPending},
		"new operation, deny late": {d: with(func(d *DecisionCmd) { d.OperationID = "op-3"; d.Decision = exagentv1.DecisionDeny }), wantKind: KindNotPending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, r, err := Decide(applied, env, tc.d, t0.Add(2*time.Hour))
			if wantErrKind(t, err, tc.wantKind) {
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("error %q does not mention %q", err, tc.wantMsg)
				}
				return
			}
			if diff := cmp.Diff(applied, got); diff != "" {
				t.Errorf("a replay changed the state (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(receipt, r); diff != "" {
				t.Errorf("a replay returned another receipt (-want +got):\n%s", diff)
			}
		})
	}
}

// With two approvals pending, the run resumes only when both are decided.
func TestApproveSeveral(t *testing.T) {
	env := defaultEnv(t)
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("p1", "pay", `{"amount":1}`), call("p2", "pay", `{"amount":2}`)))
	h.step()
	if h.act.Kind != ActPause || h.s.PendingApprovals != 2 {
		t.Fatalf("want a pause for two approvals, got %s / %d", h.act.Kind, h.s.PendingApprovals)
	}
	s, _, err := Decide(h.s, env, approveCmd(t, h.s, "p1", "op-1", "alice"), t0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase != exagentv1.PhaseAwaitingApproval || s.PendingApprovals != 1 || !strings.Contains(s.Message, "1 approval(s) still pending") {
		t.Fatalf("after one of two: %s %d %q", s.Phase, s.PendingApprovals, s.Message)
	}
	s, _, err = Decide(s, env, approveCmd(t, s, "p2", "op-2", "bob"), t0)
	if err != nil || s.Phase != exagentv1.PhaseApproved {
		t.Fatalf("after both: %s %v", s.Phase, err)
	}
}

func TestDeny(t *testing.T) {
	stop := defaultEnv(t)
	cont := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").
		OnDeny(exagentv1.OnDenyContinue).Spec(), MakeRun().Spec())
	h := newHarness(t, stop).claim(w1)
	h.step()
	h.respond(tools(call("p1", "pay", `{"amount":1}`), call("p2", "pay", `{"amount":2}`)))
	h.step()
	two := h.s
	deny := func(s Status, callID string) DecisionCmd {
		d := approveCmd(t, s, callID, "deny-"+callID, "alice")
		d.Decision, d.Reason = exagentv1.DecisionDeny, "too expensive"
		return d
	}
	t.Run("stop ends the run and the other call never runs", func(t *testing.T) {
		got, r, err := Decide(two, stop, deny(two, "p1"), t0)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{string(exagentv1.PhaseDenied), exagentv1.ReasonDenied, "call p1 (pay) denied by alice: too expensive",
			string(exagentv1.ApprovalDenied), string(exagentv1.ApprovalCancelled), "0", "Deny"}
		gotv := []string{string(got.Phase), got.Reason, got.Message, string(got.Approvals[0].State), string(got.Approvals[1].State),
			string(rune('0' + got.PendingApprovals)), r.Decision}
		if diff := cmp.Diff(want, gotv); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("continue tells the model who denied and why", func(t *testing.T) {
		h := newHarness(t, cont).claim(w1)
		h.step()
		h.respond(tools(call("p1", "pay", `{"amount":1}`), call("p2", "pay", `{"amount":2}`)))
		h.step()
		two := h.s
		s, _, err := Decide(two, cont, deny(two, "p1"), t0)
		if err != nil {
			t.Fatal(err)
		}
		if s.Phase != exagentv1.PhaseAwaitingApproval {
			t.Fatalf("phase %s with one approval still pending", s.Phase)
		}
		s, _, err = Decide(s, cont, approveCmd(t, s, "p2", "op-2", "bob"), t0)
		if err != nil || s.Phase != exagentv1.PhaseApproved {
			t.Fatalf("phase %s, %v", s.Phase, err)
		}
		s, f, _ := Claim(s, cont, "w2", t0)
		s, act, err := Step(s, cont, f, t0)
		if err != nil || act.Kind != ActRunTools || len(act.Calls) != 1 || act.Calls[0].CallID != "p2" {
			t.Fatalf("only the approved call runs: %+v %v", act, err)
		}
		s, _ = RecordOutcome(s, cont, f, ToolResult{CallID: "p2", Kind: ResultSucceeded, Output: "paid 2"}, t0)
		s, act, _ = Step(s, cont, f, t0)
		if act.Kind != ActCallModel {
			t.Fatalf("want the next request, got %s", act.Kind)
		}
		msgs := act.Model.Messages
		if got := msgs[len(msgs)-2].Content; got != "Denied by alice: too expensive. The call was not run." {
			t.Errorf("model is told %q", got)
		}
	})
}

func TestCancel(t *testing.T) {
	env := defaultEnv(t)
	_, awaiting := paused(t)
	_, inflight := inFlightRun(t)
	cancel := DecisionCmd{OperationID: "c-1", Decision: exagentv1.DecisionCancel, Actor: actor("alice"), Reason: "stop"}
	with := func(mut func(*DecisionCmd)) DecisionCmd { d := cancel; mut(&d); return d }
	cases := map[string]struct {
		s          Status
		d          DecisionCmd
		wantKind   ErrorKind
		wantCalls  map[string]exagentv1.CallState
		wantCharge time.Duration
	}{
		"queued":   {s: queued(t, env), d: cancel, wantCalls: map[string]exagentv1.CallState{}},
		"awaiting": {s: awaiting, d: cancel, wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallPending}},
		"awaiting by approval id": {s: awaiting, d: with(func(d *DecisionCmd) {
			d.ApprovalID, d.PayloadHash, d.Revision = awaiting.Approvals[0].ID, awaiting.Approvals[0].PayloadHash, 1
		}), wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallPending}},
		"running: the claim is revoked and in-flight calls are uncertain": {s: inflight, d: cancel,
			wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallUncertain, "p1": exagentv1.CallPending}, wantCharge: time.Hour},
		"current revision":          {s: awaiting, d: with(func(d *DecisionCmd) { d.Revision = 1 }), wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallPending}},
		"old revision":              {s: awaiting, d: with(func(d *DecisionCmd) { d.Revision = 9 }), wantKind: KindConflict},
		"approval id, old revision": {s: awaiting, d: with(func(d *DecisionCmd) { d.ApprovalID = awaiting.Approvals[0].ID }), wantKind: KindConflict},
		"ended":                     {s: Status{Phase: exagentv1.PhaseFailed}, d: cancel, wantKind: KindNotPending},
		"not started":               {s: Status{}, d: cancel, wantCalls: map[string]exagentv1.CallState{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, r, err := Cancel(tc.s, env, tc.d, t0.Add(time.Second))
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			calls := map[string]exagentv1.CallState{}
			for _, c := range got.Calls {
				calls[c.ID] = c.State
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if got.Phase != exagentv1.PhaseCancelled || got.Claim != nil || got.PendingApprovals != 0 || r.Decision != "Cancel" ||
				!strings.HasPrefix(got.Message, "cancelled by alice: stop") {
				t.Errorf("phase %s claim %v pending %d receipt %+v message %q", got.Phase, got.Claim, got.PendingApprovals, r, got.Message)
			}
			if got.Ledger.ActiveTimeUsed.Duration != tc.wantCharge {
				t.Errorf("charged %s, want %s", got.Ledger.ActiveTimeUsed.Duration, tc.wantCharge)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	h, s := uncertainRun(t)
	env := h.env
	p1 := s.Calls[0]
	resolve := DecisionCmd{OperationID: "r-1", Decision: exagentv1.DecisionResolve, CallID: "p1", PayloadHash: p1.PayloadHash,
		Revision: s.Revision, Actor: actor("alice"), Outcome: exagentv1.ResolveSucceeded, Evidence: "charge exists"}
	with := func(mut func(*DecisionCmd)) DecisionCmd { d := resolve; mut(&d); return d }
	cases := map[string]struct {
		s         Status
		d         DecisionCmd
		wantKind  ErrorKind
		wantState exagentv1.CallState
		wantPhase exagentv1.RunPhase
	}{
		"succeeded, another call still uncertain": {s: s, d: resolve, wantState: exagentv1.CallSucceeded, wantPhase: exagentv1.PhaseUncertain},
		"failed": {s: s, d: with(func(d *DecisionCmd) { d.Outcome = exagentv1.ResolveFailed }), wantState: exagentv1.CallFailed, wantPhase: exagentv1.PhaseUncertain},
		"retry":  {s: s, d: with(func(d *DecisionCmd) { d.Outcome = exagentv1.ResolveRetry }), wantState: exagentv1.CallApproved, wantPhase: exagentv1.PhaseUncertain},
		"last uncertain call resumes the run": {s: func() Status {
			s := clone(s)
			s.Calls[1].State = exagentv1.CallFailed
			s.Calls[1].Outcome = &exagentv1.CallOutcome{Result: "x"}
			return s
		}(), d: resolve, wantState: exagentv1.CallSucceeded, wantPhase: exagentv1.PhaseApproved},
		"bad outcome":     {s: s, d: with(func(d *DecisionCmd) { d.Outcome = "Perhaps" }), wantKind: KindConflict},
		"not uncertain":   {s: s, d: with(func(d *DecisionCmd) { d.CallID = "nope" }), wantKind: KindNotPending},
		"old revision":    {s: s, d: with(func(d *DecisionCmd) { d.Revision = 0 }), wantKind: KindConflict},
		"changed payload": {s: s, d: with(func(d *DecisionCmd) { d.PayloadHash = "sha256:x" }), wantKind: KindConflict},
		"run not uncertain": {s: func() Status { s := clone(s); s.Phase = exagentv1.PhaseQueued; return s }(), d: resolve,
			wantKind: KindNotPending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, r, err := Decide(tc.s, env, tc.d, t0.Add(time.Hour))
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			c := got.Calls[0]
			if c.State != tc.wantState || got.Phase != tc.wantPhase || r.Outcome != tc.d.Outcome || r.Target != "p1" {
				t.Fatalf("call %s phase %s receipt %+v", c.State, got.Phase, r)
			}
			switch tc.wantState {
			case exagentv1.CallApproved:
				if c.Outcome != nil || c.IdempotencyKey != runUID+"/p1" {
					t.Errorf("retry must keep the key and drop the outcome: %+v", c)
				}
			default:
				if c.Outcome == nil || c.Outcome.ResolvedBy != "alice" || c.Outcome.Evidence != "charge exists" ||
					!strings.Contains(c.Outcome.Result, "confirmed by alice") {
					t.Errorf("outcome = %+v", c.Outcome)
				}
			}
		})
	}
}

func TestDecideUnknownKind(t *testing.T) {
	_, s := paused(t)
	if _, _, err := Decide(s, defaultEnv(t), DecisionCmd{OperationID: "x", Decision: "Veto"}, t0); !IsKind(err, KindConflict) {
		t.Errorf("error = %v", err)
	}
}

func TestDecisionSizeBudget(t *testing.T) {
	_, s := paused(t)
	env, _ := NewEnv(EnvInput{RunUID: runUID, Agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), Run: MakeRun().Spec(), SizeBudget: encodedSize(&s) + 10})
	if _, _, err := Approve(s, env, approveCmd(t, s, "p1", "op", "alice"), t0); !IsKind(err, KindTooLarge) {
		t.Errorf("error = %v, want TooLarge", err)
	}
}
