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

// quorumOfTwo: pay asks with a quorum of two approvals.
func quorumOfTwo(t testing.TB) (*Env, Status) {
	env := editEnv(t, func(r *exagentv1.PolicyRule) { r.Quorum = &exagentv1.Quorum{Approvals: 2} })
	return env, pausedOn(t, env, `{"amount":42}`).s
}

func voteCmd(t testing.TB, s Status, op, who, payloadHash, args string) DecisionCmd {
	d := approveCmd(t, s, "p1", op, who)
	if payloadHash != "" {
		d.PayloadHash = payloadHash
	}
	d.Arguments = args
	return d
}

// TestQuorumVoteBindsItsVersion: under a quorum every vote counts only for
// the version of the call it saw. The rule: only the first vote may edit;
// an edit after votes were cast is refused — at admission (CheckApprove)
// and again when applied, whatever order decisions were admitted in — so
// one person can never choose alone what a two-person rule lets through.
func TestQuorumVoteBindsItsVersion(t *testing.T) {
	env, awaiting := quorumOfTwo(t)
	model := awaiting.Approvals[0].PayloadHash

	t.Run("edit as the last vote is refused", func(t *testing.T) {
		one, _, err := Approve(awaiting, env, voteCmd(t, awaiting, "op-a", "alice", "", ""), t0)
		if err != nil {
			t.Fatal(err)
		}
		if v := one.Approvals[0].Votes[0]; v.PayloadHash != model {
			t.Errorf("alice's vote journals payloadHash %q, want the model's %q", v.PayloadHash, model)
		}
		edit := voteCmd(t, one, "op-b", "bob", "", `{"amount":900}`)
		edit.Arguments = `{"amount":400}`
		if err := CheckApprove(one, env, edit); !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "only the first vote may edit") {
			t.Errorf("admission of an edit after a vote: %v, want the edit refused", err)
		}
		after, _, err := Approve(one, env, edit, t0)
		if !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "already has 1 vote on the call as proposed") ||
			!strings.Contains(err.Error(), "alice") || !strings.Contains(err.Error(), "vote for the call as it is") {
			t.Fatalf("an edit after alice's vote: %v, want a refusal naming the vote and what to do", err)
		}
		if after.Phase != exagentv1.PhaseAwaitingApproval || after.Calls[0].Args != `{"amount":42}` {
			t.Errorf("refused edit changed the run: phase %s args %s", after.Phase, after.Calls[0].Args)
		}
		// bob may still vote for the call as it is.
		done, _, err := Approve(one, env, voteCmd(t, one, "op-b2", "bob", "", ""), t0)
		if err != nil || done.Phase != exagentv1.PhaseApproved || done.Calls[0].Args != `{"amount":42}` {
			t.Fatalf("bob's plain vote: %v phase %s", err, done.Phase)
		}
	})

	t.Run("edit as the first vote sets the version", func(t *testing.T) {
		edited, _, err := Approve(awaiting, env, voteCmd(t, awaiting, "op-e", "alice", "", `{"amount":10}`), t0)
		if err != nil {
			t.Fatal(err)
		}
		a := edited.Approvals[0]
		if a.Edit == nil || a.Votes[0].PayloadHash != a.Edit.PayloadHash || a.Edit.PayloadHash == model {
			t.Fatalf("the editing vote journals %q, want the edited version %+v", a.Votes[0].PayloadHash, a.Edit)
		}
		if got := a.QuorumMissing(); got != "needs 1 more approval" {
			t.Errorf("missing = %q", got)
		}
		// A vote on the model's version (what bob saw before the edit) is refused.
		if _, _, err := Approve(edited, env, voteCmd(t, edited, "op-f", "bob", model, ""), t0); !IsKind(err, KindConflict) {
			t.Errorf("a vote on the model's version after the edit: %v", err)
		}
		final, _, err := Approve(edited, env, voteCmd(t, edited, "op-g", "bob", a.Edit.PayloadHash, ""), t0)
		if err != nil || final.Phase != exagentv1.PhaseApproved || final.Calls[0].Args != `{"amount":10}` {
			t.Fatalf("bob's vote on the edited version: %v phase %s", err, final.Phase)
		}
		for _, v := range final.Approvals[0].Votes {
			if v.PayloadHash != a.Edit.PayloadHash {
				t.Errorf("vote of %s journals %q, want the edited version", v.Actor.Username, v.PayloadHash)
			}
		}
	})

	// Admitted in one order, applied in the other: bob's edit is admitted
	// while no vote exists, alice's plain vote lands first; the edit is then
	// refused inside the compare-and-swap.
	t.Run("edit admitted first, applied after a vote", func(t *testing.T) {
		edit := voteCmd(t, awaiting, "op-b", "bob", "", `{"amount":10}`)
		if err := CheckApprove(awaiting, env, edit); err != nil {
			t.Fatalf("admission of the edit on a fresh approval: %v", err)
		}
		one, _, err := Approve(awaiting, env, voteCmd(t, awaiting, "op-a", "alice", "", ""), t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Approve(one, env, edit, t0); !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "only the first vote may edit") {
			t.Errorf("the edit applied after alice's vote: %v, want it refused", err)
		}
	})

	// The other way round: alice's plain vote (on the model's version) is
	// admitted, bob's edit lands first; alice's vote is then refused.
	t.Run("vote admitted first, applied after an edit", func(t *testing.T) {
		plain := voteCmd(t, awaiting, "op-a", "alice", "", "")
		if err := CheckApprove(awaiting, env, plain); err != nil {
			t.Fatalf("admission of alice's vote: %v", err)
		}
		edited, _, err := Approve(awaiting, env, voteCmd(t, awaiting, "op-b", "bob", "", `{"amount":10}`), t0)
		if err != nil {
			t.Fatal(err)
		}
		after, _, err := Approve(edited, env, plain, t0)
		if !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "does not count") {
			t.Errorf("alice's vote on the model's version applied after bob's edit: %v, want it refused", err)
		}
		if after.Phase != exagentv1.PhaseAwaitingApproval {
			t.Errorf("phase %s: one editor alone met a quorum of two", after.Phase)
		}
	})

	// A vote journaled without its version (before votes carried one) is
	// on the model's version: it never counts for an edit.
	t.Run("old votes count only for the model's version", func(t *testing.T) {
		a := awaiting.Approvals[0].DeepCopy()
		a.Votes = []exagentv1.Vote{{Actor: actor("alice"), OperationID: "op-a", At: secTime(t0)}}
		if got := a.QuorumMissing(); got != "needs 1 more approval" {
			t.Errorf("old vote on the model's version: missing %q", got)
		}
		a.Edit = &exagentv1.ApprovalEdit{ArgsHash: "sha256:e", PayloadHash: "sha256:edited", Editor: actor("bob")}
		a.Votes = append(a.Votes, exagentv1.Vote{Actor: actor("bob"), OperationID: "op-b", At: secTime(t0)})
		if got := a.QuorumMissing(); got != "needs 1 more approval" {
			t.Errorf("an old vote cast before the edit counted for it: missing %q, want 1 more", got)
		}
		// Old votes from the editor's on were on the edited version.
		a.Votes = append(a.Votes, exagentv1.Vote{Actor: actor("carol"), OperationID: "op-c", At: secTime(t0)})
		if got := a.QuorumMissing(); got != "" {
			t.Errorf("the editor's and a later old vote: missing %q, want the quorum met", got)
		}
	})
}

// TestEditAfterSendGetsNewKey: a call sent once, Uncertain, resolved Retry
// and asked again (its binding changed) may be edited; the edited call is
// sent with a key of its own, never the one the old arguments were sent
// with, and a re-send of the edited call reuses the new key.
func TestEditAfterSendGetsNewKey(t *testing.T) {
	// activeTimeLimit Never: a lost owner's reservation is charged whole.
	agent := func(schema string) *exagentv1.AgentSpec {
		return MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Schema("pay", schema).
			Rule("pay-asks", exagentv1.PolicyAsk, "", "pay").Spec()
	}
	run := MakeRun().ActiveTimeLimit(exagentv1.Never).Spec()
	h := pausedOn(t, mustEnv(t, agent(paySchema), run), `{"amount":42,"to":"bob"}`)
	h.approveAll()
	h.claim(w1)
	act := h.step()
	if act.Kind != ActRunTools || act.Calls[0].IdempotencyKey != runUID+"/p1" {
		t.Fatalf("first send: %s", describe(act))
	}
	h.advance(time.Minute).recover()
	if h.s.Phase != exagentv1.PhaseUncertain {
		t.Fatalf("after the lost owner: phase %s", h.s.Phase)
	}
	c := h.s.Calls[0]
	h.decide(DecisionCmd{OperationID: "op-retry", Decision: exagentv1.DecisionResolve, CallID: "p1", Outcome: exagentv1.ResolveRetry,
		PayloadHash: c.PayloadHash, Revision: h.s.Revision, Actor: actor("alice"), Evidence: "nothing arrived"})

	// The tool's schema changes while the run waits: the retry is asked about again.
	h.env = mustEnv(t, agent(`{"type":"object","properties":{"amount":{"type":"integer","maximum":999},"to":{"type":"string"}},"required":["amount"]}`), run)
	h.claim("worker-2")
	if act := h.step(); act.Kind != ActPause {
		t.Fatalf("retry under a changed schema: %s, want asked again: %s", describe(act), h.s.Message)
	}
	h.decide(editCmd(t, h.s, "op-edit", "carol", `{"amount":40,"to":"bob"}`))
	h.claim("worker-3")
	act = h.step()
	if act.Kind != ActRunTools || len(act.Calls) != 1 {
		t.Fatalf("after the edit: %s", describe(act))
	}
	key := act.Calls[0].IdempotencyKey
	if key == runUID+"/p1" || !strings.HasPrefix(key, runUID+"/p1/edit-") {
		t.Fatalf("the edited call is sent with key %q, want a key of its own (not the sent call's %q)", key, runUID+"/p1")
	}
	if h.s.Ledger.ToolCalls != 1 {
		t.Errorf("ledger.toolCalls = %d: the edited re-send is the same call", h.s.Ledger.ToolCalls)
	}
	// Lost again and retried: the edited version keeps its key.
	h.advance(time.Minute).recover()
	c = h.s.Calls[0]
	h.decide(DecisionCmd{OperationID: "op-retry-2", Decision: exagentv1.DecisionResolve, CallID: "p1", Outcome: exagentv1.ResolveRetry,
		PayloadHash: c.PayloadHash, Revision: h.s.Revision, Actor: actor("alice"), Evidence: "nothing arrived"})
	h.claim("worker-4")
	if act := h.step(); act.Kind != ActRunTools || act.Calls[0].IdempotencyKey != key {
		t.Fatalf("re-send of the edited call: %s, want key %q", describe(act), key)
	}
}
