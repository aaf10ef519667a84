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

package controllers_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// runAbsent fails the test if run exists now.
func (h *harness) runAbsent(name, why string) {
	h.t.Helper()
	err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &exagentv1.AgentRun{})
	if !apierrors.IsNotFound(err) {
		h.t.Fatalf("turn %s exists (err %v): %s", name, err, why)
	}
}

// setSuspend sets the conversation's spec.suspend.
func (h *harness) setSuspend(name string, suspend bool) {
	h.t.Helper()
	c := &exagentv1.Conversation{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, c); err != nil {
		h.t.Fatal(err)
	}
	c.Spec.Suspend = suspend
	if err := h.c.Update(context.Background(), c); err != nil {
		h.t.Fatalf("suspend %v: %v", suspend, err)
	}
}

// TestConversationRoundRobin: a RoundRobin session of two Agents for 4
// turns — a person starts it, the controller creates turns 2..4 (CONV-tN),
// the participants in order; the reviewer's turn 2 asks for approval and
// no turn 3 exists while it waits; suspended, then approved — turn 3 starts
// only after unsuspend; the session ends at maxTurns. Turn 2 runs under
// the reviewer's instructions, and its history says so.
func TestConversationRoundRobin(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("planner", exagentv1.AgentSpec{Instructions: "You plan.", Model: fixture.Scripted(fixture.TextTurn("plan: scale to 3"))})
	h.createAgent("reviewer", exagentv1.AgentSpec{
		Instructions: "You review.",
		Model:        fixture.Scripted(fixture.CallTurn("c1", "pay", map[string]any{"amount": 1}), fixture.TextTurn("reviewed")),
		Tools:        []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy:       fixture.AskPolicy("pay"),
	})
	h.createConversation("rr", "planner", func(s *exagentv1.ConversationSpec) {
		s.TurnPolicy = exagentv1.TurnRoundRobin
		s.Limits.MaxTurns = ptr.To[int32](4)
		s.Participants = []exagentv1.Participant{
			{Name: "planner", AgentRef: &exagentv1.LocalObjectReference{Name: "planner"}},
			{Name: "reviewer", AgentRef: &exagentv1.LocalObjectReference{Name: "reviewer"}},
		}
	})
	h.createRun("rr-t1", "planner", turnOf("rr"), func(s *exagentv1.AgentRunSpec) {
		s.Input, s.RequestedBy = "plan the rollout", &exagentv1.Actor{Username: "carol"} // admission's stamp (no webhook here)
	})
	h.waitPhase("rr-t1", exagentv1.PhaseSucceeded)

	second := h.waitPhase("rr-t2", exagentv1.PhaseAwaitingApproval)
	if ref := second.Spec.ConversationRef; ref == nil || ref.Participant != "reviewer" || second.Spec.AgentRef.Name != "reviewer" {
		t.Fatalf("turn 2 is %+v of Agent %s, want the reviewer's", ref, second.Spec.AgentRef.Name)
	}
	if rb := second.Spec.RequestedBy; rb == nil || rb.Username != h.get("rr-t1").Spec.RequestedBy.Username {
		t.Errorf("turn 2's requester %+v, want turn 1's", rb)
	}
	var note bool
	for _, m := range second.Status.History {
		note = note || m.Role == exagentv1.RoleSystem && strings.Contains(m.Content, "taken by participant reviewer (Agent reviewer)")
	}
	if !note {
		t.Errorf("turn 2's history does not note the hand-off: %+v", second.Status.History)
	}
	h.waitConversation("rr", "turn 2 waits", func(s exagentv1.ConversationStatus) bool {
		return s.Phase == exagentv1.ConversationAwaitingApproval && s.Open == "rr-t2"
	})
	h.runAbsent("rr-t3", "turn 2 waits for approval")

	h.setSuspend("rr", true)
	h.approve(second, "ok")
	h.waitPhase("rr-t2", exagentv1.PhaseSucceeded)
	h.waitConversation("rr", "suspended after turn 2", func(s exagentv1.ConversationStatus) bool {
		return s.Phase == exagentv1.ConversationSuspended && len(s.Turns) == 2
	})
	h.runAbsent("rr-t3", "the conversation is suspended")

	h.setSuspend("rr", false)
	third := h.waitPhase("rr-t3", exagentv1.PhaseSucceeded)
	if third.Spec.AgentRef.Name != "planner" {
		t.Errorf("turn 3 is Agent %s's, want the planner's", third.Spec.AgentRef.Name)
	}
	h.approve(h.waitPhase("rr-t4", exagentv1.PhaseAwaitingApproval), "ok")
	h.waitPhase("rr-t4", exagentv1.PhaseSucceeded)
	h.waitConversation("rr", "ended at maxTurns", func(s exagentv1.ConversationStatus) bool {
		return s.Phase == exagentv1.ConversationEnded && len(s.Turns) == 4
	})
	h.runAbsent("rr-t5", "maxTurns is 4")
	if n := ts.toolRequests("/pay"); n != 2 {
		t.Errorf("pay ran %d times, want 2 (turns 2 and 4, once each)", n)
	}
}

// TestConversationHumanTurn: a human participant's turn is a question its
// people answer (kubectl approve answer): no model request; the answer is
// what the next turn's model reads, attributed to them; an approver of
// the Agent who is not the participant cannot answer it.
func TestConversationHumanTurn(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	h.createAgent("sre", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("noted"))})
	h.createConversation("hc", "sre", func(s *exagentv1.ConversationSpec) {
		s.Participants = []exagentv1.Participant{
			{Name: "sre", AgentRef: &exagentv1.LocalObjectReference{Name: "sre"}},
			{Name: "oncall", Human: &exagentv1.Approvers{Users: []string{users[bob].actor.Username}}},
		}
	})
	h.createRun("hc-t1", "sre", turnOf("hc"), func(s *exagentv1.AgentRunSpec) { s.Input = "status?" })
	h.waitPhase("hc-t1", exagentv1.PhaseSucceeded)
	h.createRun("hc-t2", "sre", func(s *exagentv1.AgentRunSpec) {
		s.Input = "Is the rollout safe?"
		s.ConversationRef = &exagentv1.ConversationRef{Name: "hc", Participant: "oncall"}
	})
	asked := h.waitPhase("hc-t2", exagentv1.PhaseAwaitingApproval)
	q := pendingApproval(t, asked)
	if q.Question == nil || q.Question.Source != exagentv1.QuestionParticipant || !strings.Contains(q.Question.Text, "Is the rollout safe?") {
		t.Fatalf("turn 2's request %+v, want the participant's question", q)
	}
	h.decide(alice, h.decision("hc-t2", "by-alice").Answer(q, `"no"`, ""))
	h.waitRun("hc-t2", "alice's answer refused", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseAwaitingApproval && r.Status.Approvals[0].State == exagentv1.ApprovalPending
	})
	h.decide(bob, h.decision("hc-t2", "by-bob").Answer(q, `"yes, go ahead"`, ""))
	done := h.waitPhase("hc-t2", exagentv1.PhaseSucceeded)
	if done.Status.Ledger.Requests != 0 || done.Status.Output != "yes, go ahead" {
		t.Errorf("turn 2: %d model requests, output %q; want none and the answer", done.Status.Ledger.Requests, done.Status.Output)
	}
	h.createRun("hc-t3", "sre", turnOf("hc"), func(s *exagentv1.AgentRunSpec) { s.Input = "go on" })
	third := h.waitPhase("hc-t3", exagentv1.PhaseSucceeded)
	var heard bool
	for _, m := range transcriptMessages(t, h, third) {
		heard = heard || m.Role == exagentv1.RoleUser && m.Content == "[oncall] yes, go ahead"
	}
	if !heard {
		t.Errorf("turn 3's transcript does not carry the participant's answer: %+v", transcriptMessages(t, h, third))
	}
}

// TestConversationEndAndFork: a turn whose answer carries the endMarker
// ends the conversation (a turn queued behind it ends ConversationEnded,
// nothing run); a branch forked from turn 1 continues turn 1 only — its
// model never sees turn 2.
func TestConversationEndAndFork(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	h.createAgent("bot", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("answer [[bye]]"))})
	h.createConversation("main", "bot", func(s *exagentv1.ConversationSpec) { s.EndMarker = "[[bye]]" })
	h.createRun("main-t1", "bot", turnOf("main"), func(s *exagentv1.AgentRunSpec) { s.Input = "first question" })
	h.createRun("main-t2", "bot", turnOf("main"), func(s *exagentv1.AgentRunSpec) { s.Input = "second question" })
	first := h.waitPhase("main-t1", exagentv1.PhaseSucceeded)
	if first.Status.Turn == nil || first.Status.Turn.EndedConversation != exagentv1.EndedByMarker {
		t.Fatalf("turn 1's status.turn %+v, want endedConversation EndMarker", first.Status.Turn)
	}
	skipped := h.waitPhase("main-t2", exagentv1.PhaseCancelled)
	if skipped.Status.Reason != exagentv1.ReasonConversationEnded || skipped.Status.Ledger.Requests != 0 {
		t.Errorf("turn 2: reason %s, %d requests; want ConversationEnded, none", skipped.Status.Reason, skipped.Status.Ledger.Requests)
	}
	h.waitConversation("main", "ended by turn 1", func(s exagentv1.ConversationStatus) bool {
		return s.Phase == exagentv1.ConversationEnded
	})

	h.createConversation("branch", "bot", func(s *exagentv1.ConversationSpec) {
		s.ForkOf = &exagentv1.ConversationFork{Name: "main", Turn: 1}
	})
	h.createRun("branch-t1", "bot", turnOf("branch"), func(s *exagentv1.AgentRunSpec) { s.Input = "another question" })
	b := h.waitPhase("branch-t1", exagentv1.PhaseSucceeded)
	if b.Status.Turn == nil || b.Status.Turn.After != "main-t1" {
		t.Fatalf("the branch's first turn %+v, want it after main-t1", b.Status.Turn)
	}
	var said []string
	for _, m := range transcriptMessages(t, h, b) {
		if m.Role == exagentv1.RoleUser {
			said = append(said, m.Content)
		}
	}
	if strings.Join(said, "|") != "first question|another question" {
		t.Errorf("the branch's user messages %q, want turn 1's then its own (never turn 2's)", said)
	}

	h.createConversation("nowhere", "bot", func(s *exagentv1.ConversationSpec) {
		s.ForkOf = &exagentv1.ConversationFork{Name: "main", Turn: 7}
	})
	h.createRun("nowhere-t1", "bot", turnOf("nowhere"), func(s *exagentv1.AgentRunSpec) { s.Input = "?" })
	if r := h.waitPhase("nowhere-t1", exagentv1.PhaseCancelled); r.Status.Reason != exagentv1.ReasonForkNotFound {
		t.Errorf("a fork of a missing turn: reason %s, want ForkNotFound", r.Status.Reason)
	}
}
