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
)

func TestPause(t *testing.T) {
	env := defaultEnv(t)
	neverEnv := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
		MakeRun().ApprovalTimeout(exagentv1.Never).Spec())
	ready := func(e *Env) Status {
		h := newHarness(t, e).claim(w1)
		h.step()
		h.respond(tools(call("p1", "pay", `{"amount":1}`)))
		s := h.s
		admitProposed(&s, e)
		return s
	}
	now := t0.Add(1500 * time.Millisecond)
	s := ready(env)
	cases := map[string]struct {
		s        Status
		env      *Env
		want     func(*Status)
		wantKind ErrorKind
	}{
		"pause": {s: s, env: env, want: func(st *Status) {
			st.Revision = 1
			st.Approvals = []exagentv1.Approval{{ID: "p1-r1", CallID: "p1", PayloadHash: st.Calls[0].PayloadHash, Revision: 1,
				State: exagentv1.ApprovalPending, RequestedAt: secTime(now), ExpiresAt: secTimePtr(now.Add(24 * time.Hour))}}
			st.PendingApprovals = 1
			st.Claim = nil
			st.Ledger.ActiveTimeUsed.Duration, st.Ledger.ActiveTimeReserved.Duration = 1500*time.Millisecond, 0
			st.Phase, st.Reason, st.Message = exagentv1.PhaseAwaitingApproval, exagentv1.ReasonPending, "waiting for 1 approval(s): pay (p1-r1)"
		}},
		"approvalTimeout Never: no expiry": {s: ready(neverEnv), env: neverEnv, want: func(st *Status) {
			st.Revision = 1
			st.Approvals = []exagentv1.Approval{{ID: "p1-r1", CallID: "p1", PayloadHash: st.Calls[0].PayloadHash, Revision: 1,
				State: exagentv1.ApprovalPending, RequestedAt: secTime(now)}}
			st.PendingApprovals = 1
			st.Claim = nil
			st.Ledger.ActiveTimeUsed.Duration, st.Ledger.ActiveTimeReserved.Duration = 1500*time.Millisecond, 0
			st.Phase, st.Reason, st.Message = exagentv1.PhaseAwaitingApproval, exagentv1.ReasonPending, "waiting for 1 approval(s): pay (p1-r1)"
		}},
		"nothing pending":  {s: func() Status { s := clone(s); s.Calls[0].State = exagentv1.CallAllowed; return s }(), env: env, wantKind: KindNotPending},
		"not at a batch":   {s: running(t, env), env: env, wantKind: KindNotPending},
		"effect in flight": {s: func() Status { _, s := inFlightRun(t); return s }(), env: env, wantKind: KindUncertain},
		"uncertain beats pause": {s: func() Status {
			s := clone(s)
			s.Calls = append(s.Calls, exagentv1.ToolCall{ID: "u", Tool: "pay", State: exagentv1.CallUncertain})
			return s
		}(), env: env, wantKind: KindUncertain},
		"no room for the decisions": {s: s, env: func() *Env {
			e, _ := NewEnv(EnvInput{RunUID: runUID, Agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
				Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), Run: MakeRun().Spec(), SizeBudget: encodedSize(&s) + 1000})
			return e
		}(), wantKind: KindTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.s.Claim != nil {
				tc.s.Claim.LeaseExpiresAt = metav1.NewMicroTime(now.Add(time.Minute))
			}
			got, err := Pause(tc.s, tc.env, f1, now)
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			want := clone(tc.s)
			tc.want(&want)
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApprovalIDBounded(t *testing.T) {
	long := strings.Repeat("c", 64)
	id := approvalID(long, 12)
	if len(id) > maxID || !strings.HasSuffix(id, "-r12") || id == approvalID(strings.Repeat("d", 64), 12) {
		t.Errorf("approvalID = %q", id)
	}
}

func TestFinishAndFail(t *testing.T) {
	env := defaultEnv(t)
	final := atBatch(t, env, text("answer"))
	t.Run("finish", func(t *testing.T) {
		got, err := Finish(final, env, f1, "answer", t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		want := clone(final)
		want.Output, want.Claim = "answer", nil
		want.Ledger.ActiveTimeUsed.Duration, want.Ledger.ActiveTimeReserved.Duration = time.Second, 0
		want.Phase, want.Reason, want.Message = exagentv1.PhaseSucceeded, exagentv1.ReasonSucceeded, "the model gave its final answer"
		if diff := diffState(want, got); diff != "" {
			t.Errorf("state (-want +got):\n%s", diff)
		}
	})
	finishCases := map[string]struct {
		s        Status
		wantKind ErrorKind
	}{
		"no final answer": {s: running(t, env), wantKind: KindConflict},
		"unresolved call": {s: func() Status {
			s := clone(final)
			s.Calls = []exagentv1.ToolCall{{ID: "x", Tool: "pay", State: exagentv1.CallUncertain}}
			return s
		}(), wantKind: KindUncertain},
	}
	for name, tc := range finishCases {
		t.Run("finish/"+name, func(t *testing.T) {
			_, err := Finish(tc.s, env, f1, "x", t0)
			wantErrKind(t, err, tc.wantKind)
		})
	}
	_, inflight := inFlightRun(t)
	_, awaiting := paused(t)
	failCases := map[string]struct {
		s          Status
		reason     string
		wantKind   ErrorKind
		wantReason string
		wantCalls  map[string]exagentv1.CallState
		wantUsed   time.Duration
	}{
		"queued": {s: queued(t, env), reason: exagentv1.ReasonScriptExhausted, wantReason: exagentv1.ReasonScriptExhausted, wantCalls: map[string]exagentv1.CallState{}},
		"awaiting": {s: awaiting, reason: exagentv1.ReasonDefinitionChanged, wantReason: exagentv1.ReasonDefinitionChanged, wantUsed: 0,
			wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallPending}},
		"running: calls in flight are uncertain, reservation charged": {s: inflight, wantReason: "Failed", wantUsed: time.Hour,
			wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallUncertain, "p1": exagentv1.CallPending}},
		"ended": {s: Status{Phase: exagentv1.PhaseSucceeded}, wantKind: KindConflict},
	}
	for name, tc := range failCases {
		t.Run("fail/"+name, func(t *testing.T) {
			got, err := Fail(tc.s, tc.reason, "because", t0.Add(time.Second))
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
			if got.Phase != exagentv1.PhaseFailed || got.Reason != tc.wantReason || got.Message != "because" || got.Claim != nil ||
				got.PendingApprovals != 0 || got.Ledger.ActiveTimeUsed.Duration != tc.wantUsed {
				t.Errorf("got phase %s reason %s message %q claim %v pending %d used %s", got.Phase, got.Reason, got.Message,
					got.Claim, got.PendingApprovals, got.Ledger.ActiveTimeUsed.Duration)
			}
		})
	}
}

func TestExpire(t *testing.T) {
	env := defaultEnv(t)
	deadlineEnv := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
		MakeRun().Deadline(t0.Add(2*time.Hour)).Spec())
	_, awaiting := paused(t)
	approved, _, _ := Approve(awaiting, env, approveCmd(t, awaiting, "p1", "op", "alice"), t0)
	cases := map[string]struct {
		s           Status
		env         *Env
		now         time.Time
		wantChanged bool
		wantReason  string
	}{
		"approval not yet due":       {s: awaiting, env: env, now: t0.Add(24*time.Hour - time.Second)},
		"approval due":               {s: awaiting, env: env, now: t0.Add(24 * time.Hour), wantChanged: true, wantReason: exagentv1.ReasonApprovalExpired},
		"deadline beats approval":    {s: awaiting, env: deadlineEnv, now: t0.Add(2 * time.Hour), wantChanged: true, wantReason: exagentv1.ReasonDeadlineExceeded},
		"deadline in queue":          {s: queued(t, deadlineEnv), env: deadlineEnv, now: t0.Add(3 * time.Hour), wantChanged: true, wantReason: exagentv1.ReasonDeadlineExceeded},
		"deadline before the start":  {s: Status{}, env: deadlineEnv, now: t0.Add(3 * time.Hour), wantChanged: true, wantReason: exagentv1.ReasonDeadlineExceeded},
		"not started, not due":       {s: Status{}, env: deadlineEnv, now: t0.Add(time.Hour)},
		"deadline when approved":     {s: approved, env: deadlineEnv, now: t0.Add(3 * time.Hour), wantChanged: true, wantReason: exagentv1.ReasonDeadlineExceeded},
		"approved has no expiry":     {s: approved, env: env, now: t0.Add(100 * time.Hour)},
		"running is the owner's":     {s: running(t, deadlineEnv), env: deadlineEnv, now: t0.Add(3 * time.Hour)},
		"terminal is absorbing":      {s: Status{Phase: exagentv1.PhaseSucceeded}, env: deadlineEnv, now: t0.Add(3 * time.Hour)},
		"deadline not reached":       {s: queued(t, deadlineEnv), env: deadlineEnv, now: t0.Add(time.Hour)},
		"uncertain waits for humans": {s: func() Status { _, s := uncertainRun(t); return s }(), env: deadlineEnv, now: t0.Add(3 * time.Hour)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, changed, err := Expire(tc.s, tc.env, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v", changed)
			}
			if !changed {
				if diff := cmp.Diff(tc.s, got); diff != "" {
					t.Errorf("unchanged run differs (-want +got):\n%s", diff)
				}
				return
			}
			if got.Phase != exagentv1.PhaseExpired || got.Reason != tc.wantReason || got.PendingApprovals != 0 {
				t.Errorf("phase %s reason %s pending %d", got.Phase, got.Reason, got.PendingApprovals)
			}
			for _, a := range got.Approvals {
				if a.State == exagentv1.ApprovalPending {
					t.Errorf("approval %s still pending", a.ID)
				}
			}
		})
	}
}

func TestRecover(t *testing.T) {
	env := defaultEnv(t)
	idem := mustEnv(t, MakeAgent().HTTPTool("search", true).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), MakeRun().Spec())
	_, inflight := inFlightRun(t)
	lost := t0.Add(time.Minute)
	cases := map[string]struct {
		s          Status
		env        *Env
		wantKind   ErrorKind
		wantPhase  exagentv1.RunPhase
		wantCalls  map[string]exagentv1.CallState
		wantRev    int64
		wantIntent bool
	}{
		"lost model request: queued, intent kept to re-send": {s: awaitingModel(t, env), env: env, wantPhase: exagentv1.PhaseQueued,
			wantCalls: map[string]exagentv1.CallState{}, wantIntent: true},
		"intent without outcome: uncertain": {s: inflight, env: env, wantPhase: exagentv1.PhaseUncertain, wantRev: 1,
			wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallUncertain, "p1": exagentv1.CallPending}},
		"idempotent tool is re-sent": {s: inflight, env: idem, wantPhase: exagentv1.PhaseQueued,
			wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallAllowed, "p1": exagentv1.CallPending}},
		"idempotent re-sends are bounded": {s: func() Status { s := clone(inflight); s.Calls[0].Resends = maxResends; return s }(), env: idem,
			wantPhase: exagentv1.PhaseUncertain, wantRev: 1, wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallUncertain, "p1": exagentv1.CallPending}},
		"approved call waiting: approved": {s: func() Status { s := resumed(t); return s }(), env: env, wantPhase: exagentv1.PhaseApproved,
			wantRev: 1, wantCalls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallApproved}},
		"lease still valid": {s: func() Status {
			s := clone(inflight)
			s.Claim.LeaseExpiresAt = metav1.NewMicroTime(lost.Add(time.Second))
			return s
		}(),
			env: env, wantKind: KindConflict},
		"not running": {s: queued(t, env), env: env, wantKind: KindNotPending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Recover(tc.s, tc.env, lost)
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
			if got.Phase != tc.wantPhase || got.Claim != nil || got.Revision != tc.wantRev || (got.Cursor.ModelRequest != nil) != tc.wantIntent {
				t.Errorf("phase %s claim %v revision %d intent %v", got.Phase, got.Claim, got.Revision, got.Cursor.ModelRequest)
			}
			// A dead owner's reservation is charged whole, never refunded.
			want := tc.s.Ledger.ActiveTimeUsed.Duration + tc.s.Ledger.ActiveTimeReserved.Duration
			if got.Ledger.ActiveTimeUsed.Duration != want || got.Ledger.ActiveTimeReserved.Duration != 0 {
				t.Errorf("active time used %s reserved %s, want used %s", got.Ledger.ActiveTimeUsed.Duration, got.Ledger.ActiveTimeReserved.Duration, want)
			}
		})
	}
}

// With no active-time limit there is no reservation; the owner's time up
// to the lease's end is still recorded.
func TestRecoverUnlimited(t *testing.T) {
	_, s := uncertainRun(t)
	if got := s.Ledger.ActiveTimeUsed.Duration; got != 30*time.Second {
		t.Errorf("used = %s, want the 30s lease", got)
	}
}

// The seed's consequence, spelled out: a crash with a limit charges the
// whole balance, so the resumed run ends LimitExceeded instead of getting
// time for free.
func TestCrashExhaustsActiveTime(t *testing.T) {
	env := mustEnv(t, MakeAgent().HTTPTool("search", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().ActiveTimeLimit("10m").Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.advance(time.Minute).recover()
	h.claim("w2")
	if act := h.step(); act.Kind != ActFail || h.s.Reason != exagentv1.ReasonLimitExceeded || !strings.Contains(h.s.Message, "activeTime (10m0s)") {
		t.Errorf("after a crash: %+v %q", act, h.s.Message)
	}
}

// TestCrashWithoutActiveLimitResumes: with no active-time limit configured
// (the default) a crash costs only the dead owner's time, and the run goes
// on in the next owner.
func TestCrashWithoutActiveLimitResumes(t *testing.T) {
	env := mustEnv(t, MakeAgent().HTTPTool("search", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().ActiveTimeLimit("").Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.advance(time.Minute).recover()
	h.claim("w2")
	if act := h.step(); act.Kind != ActCallModel {
		t.Errorf("after a crash with no limit: %+v, phase %s %q; want the lost request re-sent", act, h.s.Phase, h.s.Message)
	}
	if used := h.s.Ledger.ActiveTimeUsed.Duration; used <= 0 || used > time.Minute {
		t.Errorf("active time used %s, want the dead owner's time up to its lease (0, 1m]", used)
	}
}

func TestWakeup(t *testing.T) {
	env := defaultEnv(t)
	deadlineEnv := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
		MakeRun().Deadline(t0.Add(2*time.Hour)).Spec())
	neverEnv := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
		MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	_, awaiting := paused(t)
	lowBalance := running(t, env)
	lowBalance.Ledger.ActiveTimeReserved.Duration = 10 * time.Second
	cases := map[string]struct {
		s      Status
		env    *Env
		want   time.Time
		wantOK bool
	}{
		"running: the lease":               {s: running(t, env), env: env, want: t0.Add(30 * time.Second), wantOK: true},
		"running, no limit: the lease":     {s: running(t, neverEnv), env: neverEnv, want: t0.Add(30 * time.Second), wantOK: true},
		"running: active time runs out":    {s: lowBalance, env: env, want: t0.Add(10 * time.Second), wantOK: true},
		"awaiting: the approval expiry":    {s: awaiting, env: env, want: t0.Add(24 * time.Hour), wantOK: true},
		"awaiting: the deadline is sooner": {s: awaiting, env: deadlineEnv, want: t0.Add(2 * time.Hour), wantOK: true},
		"queued: the deadline":             {s: queued(t, deadlineEnv), env: deadlineEnv, want: t0.Add(2 * time.Hour), wantOK: true},
		"queued: nothing":                  {s: queued(t, env), env: env},
		"not started: the deadline":        {s: Status{}, env: deadlineEnv, want: t0.Add(2 * time.Hour), wantOK: true},
		"terminal":                         {s: Status{Phase: exagentv1.PhaseFailed}, env: deadlineEnv},
		"uncertain waits for a human":      {s: func() Status { _, s := uncertainRun(t); return s }(), env: deadlineEnv},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Wakeup(tc.s, tc.env)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("Wakeup = %s %v, want %s %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func cmpIgnoreMessage() cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" }, cmp.Ignore())
}
