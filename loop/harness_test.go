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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// harness drives one run through the public transitions the way a
// controller does: read, call, "commit" (keep) the returned state. It
// fails the test on an unexpected error and keeps a transition log for
// the golden files.
type harness struct {
	t   testing.TB
	env *Env
	s   Status
	f   Fence
	now time.Time
	log []string
	act Action
}

func newHarness(t testing.TB, env *Env) *harness {
	t.Helper()
	h := &harness{t: t, env: env, now: t0}
	h.must("Start", func() error {
		s, err := Start(h.s, env, h.now)
		h.s = s
		return err
	})
	return h
}

func (h *harness) advance(d time.Duration) *harness { h.now = h.now.Add(d); return h }

func (h *harness) must(what string, fn func() error) {
	h.t.Helper()
	if err := fn(); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	h.record(what)
}

func (h *harness) record(what string) {
	s := &h.s
	line := fmt.Sprintf("%-28s phase=%s step=%d stage=%s rev=%d pending=%d req=%d tools=%d tok=%d used=%s rsv=%s",
		what, s.Phase, s.Cursor.Step, s.Cursor.Stage, s.Revision, s.PendingApprovals, s.Ledger.Requests,
		s.Ledger.ToolCalls, s.Ledger.PromptTokens+s.Ledger.CompletionTokens,
		s.Ledger.ActiveTimeUsed.Duration, s.Ledger.ActiveTimeReserved.Duration)
	var calls []string
	for _, c := range s.Calls {
		calls = append(calls, c.ID+":"+string(c.State))
	}
	if len(calls) > 0 {
		line += " calls=[" + strings.Join(calls, " ") + "]"
	}
	h.log = append(h.log, line)
}

func (h *harness) claim(holder string) *harness {
	h.t.Helper()
	h.must("Claim "+holder, func() error {
		s, f, err := Claim(h.s, h.env, holder, h.now)
		h.s, h.f = s, f
		return err
	})
	return h
}

func (h *harness) step() Action {
	h.t.Helper()
	var act Action
	h.must("Step", func() error {
		s, a, err := Step(h.s, h.env, h.f, h.now)
		h.s, act = s, a
		return err
	})
	h.log[len(h.log)-1] += " → " + describe(act)
	h.act = act
	return act
}

func describe(a Action) string {
	switch a.Kind {
	case ActCallModel:
		return fmt.Sprintf("CallModel(step=%d req=%d msgs=%d)", a.Model.Step, a.Model.Request, len(a.Model.Messages))
	case ActRunTools:
		var ids []string
		for _, c := range a.Calls {
			ids = append(ids, c.CallID+"@"+c.IdempotencyKey)
		}
		return "RunTools(" + strings.Join(ids, ",") + ")"
	case ActPause:
		var ids []string
		for _, ap := range a.Approvals {
			ids = append(ids, ap.ID)
		}
		return "Pause(" + strings.Join(ids, ",") + ")"
	case ActFinish:
		return fmt.Sprintf("Finish(%q)", a.Output)
	case ActFail:
		return "Fail(" + a.Reason + ")"
	}
	return string(a.Kind)
}

func (h *harness) respond(r ModelResponse) *harness {
	h.t.Helper()
	h.must("RecordModelResponse", func() error {
		s, err := RecordModelResponse(h.s, h.env, h.f, r, h.now)
		h.s = s
		return err
	})
	return h
}

func (h *harness) outcome(id string, k ResultKind, out string) *harness {
	h.t.Helper()
	h.must("RecordOutcome "+id+" "+string(k), func() error {
		s, err := RecordOutcome(h.s, h.env, h.f, ToolResult{CallID: id, Kind: k, Output: out}, h.now)
		h.s = s
		return err
	})
	return h
}

func (h *harness) decide(d DecisionCmd) exagentv1.Receipt {
	h.t.Helper()
	var r exagentv1.Receipt
	h.must("Decide "+string(d.Decision)+" "+d.ApprovalID+d.CallID, func() error {
		s, rec, err := Decide(h.s, h.env, d, h.now)
		h.s, r = s, rec
		return err
	})
	return r
}

func (h *harness) recover() *harness {
	h.t.Helper()
	h.must("Recover", func() error {
		s, err := Recover(h.s, h.env, h.now)
		h.s = s
		return err
	})
	return h
}

// approveAll approves every pending approval as alice.
func (h *harness) approveAll() {
	h.t.Helper()
	for _, a := range h.s.Approvals {
		if a.State == exagentv1.ApprovalPending {
			h.decide(DecisionCmd{OperationID: "op-" + a.ID, Decision: exagentv1.DecisionApprove, ApprovalID: a.ID,
				PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: actor("alice")})
		}
	}
}

// approvalFor returns the pending approval of call id.
func (h *harness) approvalFor(callID string) exagentv1.Approval {
	h.t.Helper()
	for _, a := range h.s.Approvals {
		if a.CallID == callID && a.State == exagentv1.ApprovalPending {
			return a
		}
	}
	h.t.Fatalf("no pending approval for %s", callID)
	return exagentv1.Approval{}
}

func (h *harness) callState(id string) exagentv1.CallState {
	i := findCall(&h.s, id)
	if i < 0 {
		return ""
	}
	return h.s.Calls[i].State
}
