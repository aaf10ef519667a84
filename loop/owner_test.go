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
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestExtend(t *testing.T) {
	env := defaultEnv(t)
	lease := env.LeaseDuration()
	for name, tc := range map[string]struct {
		s        func(t *testing.T) Status
		f        Fence
		at       time.Duration // after t0
		wantKind ErrorKind
	}{
		"live lease":                         {s: func(t *testing.T) Status { return running(t, env) }, f: f1, at: lease / 2},
		"lapsed lease of the same attempt":   {s: func(t *testing.T) Status { return running(t, env) }, f: f1, at: 3 * lease},
		"another attempt":                    {s: func(t *testing.T) Status { return running(t, env) }, f: Fence{Holder: w1, Attempt: 2}, at: 0, wantKind: KindStaleFence},
		"another holder":                     {s: func(t *testing.T) Status { return running(t, env) }, f: Fence{Holder: "w2", Attempt: 1}, at: 0, wantKind: KindStaleFence},
		"not running (recovered by another)": {s: func(t *testing.T) Status { return queued(t, env) }, f: f1, at: 0, wantKind: KindStaleFence},
	} {
		t.Run(name, func(t *testing.T) {
			s := tc.s(t)
			now := t0.Add(tc.at)
			got, err := Extend(s, env, tc.f, now)
			if !wantErrKind(t, err, tc.wantKind) || tc.wantKind != "" {
				return
			}
			if want := now.Add(lease); !got.Claim.LeaseExpiresAt.Time.Equal(want) {
				t.Errorf("lease expires at %s, want %s", got.Claim.LeaseExpiresAt.Time, want)
			}
			if s.Claim.LeaseExpiresAt.Time.Equal(got.Claim.LeaseExpiresAt.Time) {
				t.Errorf("the input state was changed or the lease not extended")
			}
			// What the owner does next works on the extended lease.
			if _, _, err := Step(got, env, tc.f, now); err != nil {
				t.Errorf("Step after Extend: %v", err)
			}
		})
	}
}

func TestNotStarted(t *testing.T) {
	t.Run("a tool call goes back to Allowed with its key and is begun again", func(t *testing.T) {
		h, _ := inFlightRun(t) // s1 Started, p1 Pending
		before := h.s.Calls[findCall(&h.s, "s1")]
		s, err := NotStarted(h.s, h.env, h.f, "s1", h.now)
		if err != nil {
			t.Fatal(err)
		}
		c := s.Calls[findCall(&s, "s1")]
		if c.State != exagentv1.CallAllowed || c.IdempotencyKey != before.IdempotencyKey || c.StartedAt != nil {
			t.Fatalf("call after NotStarted = %s key %q startedAt %v", c.State, c.IdempotencyKey, c.StartedAt)
		}
		next, act, err := Step(s, h.env, h.f, h.now)
		if err != nil {
			t.Fatal(err)
		}
		if act.Kind != ActRunTools || len(act.Calls) != 1 || act.Calls[0].CallID != "s1" || act.Calls[0].IdempotencyKey != before.IdempotencyKey {
			t.Fatalf("next action = %+v, want s1 begun again with the same key", act)
		}
		if next.Ledger.ToolCalls != h.s.Ledger.ToolCalls {
			t.Errorf("ledger.toolCalls = %d, want %d (a call never started is not charged twice)", next.Ledger.ToolCalls, h.s.Ledger.ToolCalls)
		}
	})
	t.Run("an approved call goes back to Approved", func(t *testing.T) {
		h, s := paused(t)
		s, _, err := Approve(s, h.env, approveCmd(t, s, "p1", "op1", "alice"), h.now)
		if err != nil {
			t.Fatal(err)
		}
		h.s = s
		h.claim("w2")
		if act := h.step(); act.Kind != ActRunTools {
			t.Fatalf("action %s, want RunTools", act.Kind)
		}
		s, err = NotStarted(h.s, h.env, h.f, "p1", h.now)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Calls[findCall(&s, "p1")].State; got != exagentv1.CallApproved {
			t.Errorf("p1 = %s, want Approved", got)
		}
	})
	t.Run("the model request is sent again", func(t *testing.T) {
		env := defaultEnv(t)
		s := awaitingModel(t, env)
		s2, err := NotStarted(s, env, f1, "", t0)
		if err != nil {
			t.Fatal(err)
		}
		if s2.Cursor.ModelRequest != nil {
			t.Fatalf("model intent kept: %+v", s2.Cursor.ModelRequest)
		}
		next, act, err := Step(s2, env, f1, t0)
		if err != nil || act.Kind != ActCallModel {
			t.Fatalf("Step = %v, %v; want CallModel", act.Kind, err)
		}
		if next.Ledger.Requests != s.Ledger.Requests || next.Cursor.ModelResends != 0 {
			t.Errorf("requests %d (want %d), modelResends %d (want 0): a request never sent is neither charged nor a re-send",
				next.Ledger.Requests, s.Ledger.Requests, next.Cursor.ModelResends)
		}
	})
	for name, tc := range map[string]struct {
		f        Fence
		callID   string
		wantKind ErrorKind
	}{
		"another attempt's call": {f: Fence{Holder: w1, Attempt: 2}, callID: "s1", wantKind: KindStaleFence},
		"a call not started":     {f: f1, callID: "p1", wantKind: KindNotPending},
		"no such call":           {f: f1, callID: "zz", wantKind: KindNotPending},
		"no model request":       {f: f1, callID: "", wantKind: KindNotPending},
	} {
		t.Run(name, func(t *testing.T) {
			h, s := inFlightRun(t)
			_, err := NotStarted(s, h.env, tc.f, tc.callID, h.now)
			wantErrKind(t, err, tc.wantKind)
		})
	}
}

func TestRecordLateOutcome(t *testing.T) {
	cancelled := func(t *testing.T) (*harness, Status) {
		h, s := inFlightRun(t) // s1 Started by attempt 1
		s, _, err := Cancel(s, h.env, DecisionCmd{OperationID: "c1", Name: "c1", Decision: exagentv1.DecisionCancel,
			Actor: actor("alice"), Reason: "stop"}, h.now)
		if err != nil {
			t.Fatal(err)
		}
		if s.Phase != exagentv1.PhaseCancelled || s.Calls[findCall(&s, "s1")].State != exagentv1.CallUncertain {
			t.Fatalf("fixture: phase %s, s1 %s", s.Phase, s.Calls[findCall(&s, "s1")].State)
		}
		return h, s
	}
	t.Run("the outcome is journaled in the cancelled run", func(t *testing.T) {
		h, s := cancelled(t)
		got, err := RecordLateOutcome(s, h.env, 1, ToolResult{CallID: "s1", Kind: ResultSucceeded, Output: "found"}, h.now)
		if err != nil {
			t.Fatal(err)
		}
		c := got.Calls[findCall(&got, "s1")]
		if got.Phase != exagentv1.PhaseCancelled || c.State != exagentv1.CallSucceeded || c.Outcome == nil || c.Outcome.Result != "found" {
			t.Fatalf("phase %s, s1 %s outcome %+v", got.Phase, c.State, c.Outcome)
		}
	})
	for name, tc := range map[string]struct {
		attempt int64
		res     ToolResult
	}{
		"another attempt":      {attempt: 2, res: ToolResult{CallID: "s1", Kind: ResultSucceeded}},
		"an unknown answer":    {attempt: 1, res: ToolResult{CallID: "s1", Kind: ResultUnknown}},
		"a call never started": {attempt: 1, res: ToolResult{CallID: "p1", Kind: ResultSucceeded}},
		"no such call":         {attempt: 1, res: ToolResult{CallID: "zz", Kind: ResultSucceeded}},
	} {
		t.Run(name, func(t *testing.T) {
			h, s := cancelled(t)
			_, err := RecordLateOutcome(s, h.env, tc.attempt, tc.res, h.now)
			wantErrKind(t, err, KindNotPending)
		})
	}
	t.Run("a run that is not Cancelled", func(t *testing.T) {
		h, s := inFlightRun(t)
		_, err := RecordLateOutcome(s, h.env, 1, ToolResult{CallID: "s1", Kind: ResultSucceeded}, h.now)
		wantErrKind(t, err, KindNotPending)
	})
}
