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

// TestCancelEveryPhase: a Cancel ends a run in every phase that has not
// ended — not started, Queued, Running (idle, a model request in flight, a
// tool call in flight), AwaitingApproval, Approved, Uncertain — and is
// refused, changing nothing, in every ended one.
func TestCancelEveryPhase(t *testing.T) {
	env := defaultEnv(t)
	_, awaiting := paused(t)
	approved := func() Status {
		h, _ := paused(t)
		h.approveAll()
		return h.s
	}()
	_, toolInFlight := inFlightRun(t)
	hu, uncertain := uncertainRun(t)
	succeeded := func() Status {
		h := newHarness(t, env).claim(w1)
		h.step()
		h.respond(text("done"))
		h.step()
		return h.s
	}()
	cancel := DecisionCmd{OperationID: "c-1", Decision: exagentv1.DecisionCancel, Actor: actor("alice"), Reason: "stop"}

	type want struct {
		calls     map[string]exagentv1.CallState
		uncertain bool // the message points at Uncertain calls
	}
	live := map[string]struct {
		s    Status
		env  *Env
		want want
	}{
		"not started":        {s: Status{}, env: env, want: want{calls: map[string]exagentv1.CallState{}}},
		"Queued":             {s: queued(t, env), env: env, want: want{calls: map[string]exagentv1.CallState{}}},
		"Running, idle":      {s: running(t, env), env: env, want: want{calls: map[string]exagentv1.CallState{}}},
		"Running, model IO":  {s: awaitingModel(t, env), env: env, want: want{calls: map[string]exagentv1.CallState{}}},
		"Running, tool IO":   {s: toolInFlight, env: env, want: want{calls: map[string]exagentv1.CallState{"s1": exagentv1.CallUncertain, "p1": exagentv1.CallPending}, uncertain: true}},
		"AwaitingApproval":   {s: awaiting, env: env, want: want{calls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallPending}}},
		"Approved":           {s: approved, env: env, want: want{calls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallApproved}}},
		"Uncertain":          {s: uncertain, env: hu.env, want: want{calls: map[string]exagentv1.CallState{"p1": exagentv1.CallUncertain, "p2": exagentv1.CallUncertain}, uncertain: true}},
		"Uncertain, by name": {s: uncertain, env: hu.env, want: want{calls: map[string]exagentv1.CallState{"p1": exagentv1.CallUncertain, "p2": exagentv1.CallUncertain}, uncertain: true}},
	}
	for name, tc := range live {
		t.Run(name, func(t *testing.T) {
			d := cancel
			if strings.HasSuffix(name, "by name") {
				d.OperationID, d.Name = "", "run-cancel-x1"
			}
			got, r, err := Decide(tc.s, tc.env, d, t0.Add(time.Second))
			if err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			calls := map[string]exagentv1.CallState{}
			for _, c := range got.Calls {
				calls[c.ID] = c.State
			}
			if diff := cmp.Diff(tc.want.calls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if got.Phase != exagentv1.PhaseCancelled || got.Reason != exagentv1.ReasonCancelled || got.Claim != nil ||
				got.PendingApprovals != 0 || r.Decision != "Cancel" || len(got.Receipts) != len(tc.s.Receipts)+1 {
				t.Errorf("phase %s reason %s claim %v pending %d receipt %+v", got.Phase, got.Reason, got.Claim, got.PendingApprovals, r)
			}
			if !strings.HasPrefix(got.Message, "cancelled by alice: stop") ||
				strings.Contains(got.Message, "Uncertain") != tc.want.uncertain {
				t.Errorf("message %q", got.Message)
			}
			for _, a := range got.Approvals {
				if a.State == exagentv1.ApprovalPending {
					t.Errorf("approval %s is still pending", a.ID)
				}
			}
			if _, ok := Wakeup(got, tc.env); ok {
				t.Errorf("a cancelled run still wants a wakeup")
			}
			// The same operation again is its receipt, the state unchanged.
			again, r2, err := Decide(got, tc.env, d, t0.Add(time.Minute))
			if err != nil || !cmp.Equal(again, got) || !cmp.Equal(r, r2) {
				t.Errorf("replay: err %v, changed %v", err, !cmp.Equal(again, got))
			}
		})
	}

	ended := map[string]Status{
		"Succeeded": succeeded,
		"Failed":    {Phase: exagentv1.PhaseFailed},
		"Denied":    {Phase: exagentv1.PhaseDenied},
		"Cancelled": {Phase: exagentv1.PhaseCancelled},
		"Expired":   {Phase: exagentv1.PhaseExpired},
	}
	for name, s := range ended {
		t.Run("refused when "+name, func(t *testing.T) {
			got, _, err := Decide(s, env, cancel, t0.Add(time.Second))
			if !IsKind(err, KindNotPending) || !strings.Contains(err.Error(), "nothing to cancel") {
				t.Fatalf("error = %v, want NotPending", err)
			}
			if !cmp.Equal(got, s) {
				t.Errorf("a refused cancel changed the run")
			}
		})
	}
}

// TestCancelledRunStopsItsOwner: once a Running run is cancelled, its
// owner's fence is stale: it can neither dispatch the next step nor
// confirm the late result of the call that was in flight, and nothing can
// claim or recover the run again. The call stays Uncertain in the journal.
func TestCancelledRunStopsItsOwner(t *testing.T) {
	h, s := inFlightRun(t)
	now := t0.Add(time.Second)
	cancelled, _, err := Cancel(s, h.env, DecisionCmd{OperationID: "c", Actor: actor("alice")}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Step(cancelled, h.env, f1, now); !IsKind(err, KindStaleFence) {
		t.Errorf("Step after cancel: %v, want StaleFence", err)
	}
	late := ToolResult{CallID: "s1", Kind: ResultSucceeded, Output: "found"}
	if _, err := RecordOutcome(cancelled, h.env, f1, late, now); !IsKind(err, KindStaleFence) {
		t.Errorf("late result: %v, want StaleFence", err)
	}
	if _, err := BeginEffect(cancelled, h.env, f1, []string{"p1"}, now); !IsKind(err, KindStaleFence) {
		t.Errorf("BeginEffect after cancel: %v, want StaleFence", err)
	}
	if _, _, err := Claim(cancelled, h.env, "worker-2", now); !IsKind(err, KindNotPending) {
		t.Errorf("Claim after cancel: %v, want NotPending", err)
	}
	if _, err := Recover(cancelled, h.env, now.Add(time.Hour)); !IsKind(err, KindNotPending) {
		t.Errorf("Recover after cancel: %v, want NotPending", err)
	}
	if got, changed, _ := Expire(cancelled, h.env, now.Add(1000*time.Hour)); changed || !cmp.Equal(got, cancelled) {
		t.Errorf("Expire changed a cancelled run")
	}
	if c := cancelled.Calls[findCall(&cancelled, "s1")]; c.State != exagentv1.CallUncertain || c.Outcome != nil || c.IdempotencyKey == "" {
		t.Errorf("the call in flight is %s %+v; want Uncertain, no outcome, its key kept", c.State, c.Outcome)
	}
}

// TestResolveCancelled: the Uncertain calls of a Cancelled run can be
// resolved for the record — the evidence is journaled, the run stays
// Cancelled and nothing runs again (Retry is refused). Other ended runs
// take no Resolve.
func TestResolveCancelled(t *testing.T) {
	hu, uncertain := uncertainRun(t)
	env := hu.env
	now := t0.Add(time.Hour)
	cancelled, _, err := Cancel(uncertain, env, DecisionCmd{OperationID: "c", Actor: actor("alice"), Reason: "give up"}, now)
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(call string, o exagentv1.ResolveOutcome, op string) DecisionCmd {
		c := cancelled.Calls[findCall(&cancelled, call)]
		return DecisionCmd{OperationID: op, Decision: exagentv1.DecisionResolve, CallID: call, PayloadHash: c.PayloadHash,
			Revision: cancelled.Revision, Actor: actor("grace"), Outcome: o, Evidence: "seen in the ledger"}
	}

	one, r, err := Decide(cancelled, env, resolve("p1", exagentv1.ResolveSucceeded, "r1"), now)
	if err != nil {
		t.Fatalf("Resolve on a cancelled run: %v", err)
	}
	c := one.Calls[findCall(&one, "p1")]
	if c.State != exagentv1.CallSucceeded || c.Outcome == nil || c.Outcome.ResolvedBy != "grace" || c.Outcome.Evidence != "seen in the ledger" {
		t.Errorf("p1 = %s %+v", c.State, c.Outcome)
	}
	if one.Phase != exagentv1.PhaseCancelled || one.Reason != exagentv1.ReasonCancelled || r.Outcome != exagentv1.ResolveSucceeded {
		t.Errorf("phase %s reason %s receipt %+v", one.Phase, one.Reason, r)
	}
	if !strings.Contains(one.Message, "call p1 recorded Succeeded by grace (nothing runs again)") || !strings.Contains(one.Message, "Uncertain") {
		t.Errorf("message %q", one.Message)
	}
	two, _, err := Decide(one, env, resolve("p2", exagentv1.ResolveFailed, "r2"), now)
	if err != nil {
		t.Fatal(err)
	}
	if two.Phase != exagentv1.PhaseCancelled || len(two.UncertainCalls()) != 0 || strings.Contains(two.Message, "Uncertain") {
		t.Errorf("after the last resolve: phase %s, uncertain %d, message %q", two.Phase, len(two.UncertainCalls()), two.Message)
	}
	if _, _, err := Claim(two, env, "worker-2", now); !IsKind(err, KindNotPending) {
		t.Errorf("a resolved cancelled run was claimable: %v", err)
	}

	if _, _, err := Decide(cancelled, env, resolve("p1", exagentv1.ResolveRetry, "r3"), now); !IsKind(err, KindConflict) ||
		!strings.Contains(err.Error(), "nothing runs again") {
		t.Errorf("Retry on a cancelled run: %v, want Conflict", err)
	}
	if _, _, err := Decide(two, env, resolve("p1", exagentv1.ResolveFailed, "r4"), now); !IsKind(err, KindNotPending) {
		t.Errorf("resolving a call that is no longer Uncertain: %v, want NotPending", err)
	}
	failed, err := Fail(uncertain, "Injected", "x", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decide(failed, env, resolve("p1", exagentv1.ResolveSucceeded, "r5"), now); !IsKind(err, KindNotPending) {
		t.Errorf("Resolve on a Failed run: %v, want NotPending", err)
	}
}
