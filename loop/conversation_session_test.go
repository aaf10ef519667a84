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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// turnOn starts a turn of env at index after prev, as the controller does.
func turnOn(t *testing.T, env *Env, ts TurnStart) *harness {
	t.Helper()
	h := newHarness(t, env)
	ts.Now = h.now
	s, err := ContinueTurn(h.s, env, ts)
	if err != nil {
		t.Fatalf("ContinueTurn: %v", err)
	}
	h.s = s
	return h
}

// TestHumanTurn: a human participant's turn pauses at once with a
// question only its people may answer (forbidSelfApproval aside); the
// answer is a user message naming them and the turn's output, with no
// model request; declining passes the turn.
func TestHumanTurn(t *testing.T) {
	agent := MakeAgent().Policy(exagentv1.PolicySpec{Default: exagentv1.PolicyAllow, ForbidSelfApproval: true,
		Approvers: &exagentv1.Approvers{Users: []string{"boss"}}})
	run := MakeRun().Apply(func(r *exagentv1.AgentRun) {
		r.Spec.Input = "Do you agree with the plan?"
		r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "conv", Participant: "alice"}
	})
	env := mustEnv(t, agent.Spec(), run.Spec())
	prev := &PrevTurn{Name: "conv-t1", UID: "u1", Phase: exagentv1.PhaseSucceeded, Agent: "agent",
		History: []exagentv1.Message{{Role: exagentv1.RoleSystem, Content: "You are helpful."},
			{Role: exagentv1.RoleUser, Content: "plan?"}, {Role: exagentv1.RoleAssistant, Content: "Scale to 3."}}}
	people := &exagentv1.Approvers{Users: []string{"alice"}}

	for _, tc := range []struct {
		name   string
		action exagentv1.AnswerAction
		want   string
	}{
		{"answered", exagentv1.AnswerAccept, "[alice] Yes, go."},
		{"declined", exagentv1.AnswerDecline, "[alice] (passed the turn)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := turnOn(t, env, TurnStart{Index: 2, Prev: prev, Human: people})
			if h.s.Phase != exagentv1.PhaseAwaitingApproval || len(h.s.Approvals) != 1 || h.s.Claim != nil {
				t.Fatalf("phase %s, %d approvals, claim %v: want a question at once, unclaimed", h.s.Phase, len(h.s.Approvals), h.s.Claim)
			}
			a := h.s.Approvals[0]
			if a.Question == nil || a.Question.Source != exagentv1.QuestionParticipant || !strings.Contains(a.Question.Text, "Scale to 3.") ||
				!strings.Contains(a.Question.Text, "Do you agree") {
				t.Fatalf("question %+v: want the participant's, with the prompt and the last answer", a.Question)
			}
			d := DecisionCmd{OperationID: "op", Name: "op", Decision: exagentv1.DecisionAnswer, ApprovalID: a.ID,
				PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: actor("boss"), Answer: `"Yes, go."`, Action: tc.action}
			if _, _, err := Decide(h.s, env, d, h.now); err == nil {
				t.Fatal("the Agent's approver answered a participant's turn")
			}
			d.Actor = actor("requester") // forbidSelfApproval does not apply: it is their turn
			d.Actor = actor("alice")
			if tc.action == exagentv1.AnswerDecline {
				d.Answer = ""
			}
			h.decide(d)
			h.claim(w1)
			act := h.step()
			if act.Kind != ActFinish || h.s.Phase != exagentv1.PhaseSucceeded || h.s.Ledger.Requests != 0 {
				t.Fatalf("action %s, phase %s, %d model requests: want the turn ended without a model", act.Kind, h.s.Phase, h.s.Ledger.Requests)
			}
			last := h.s.History[len(h.s.History)-1]
			if last.Role != exagentv1.RoleUser || !strings.HasPrefix(last.Content, tc.want) {
				t.Errorf("last message %s %q, want a user message starting %q", last.Role, last.Content, tc.want)
			}
			if int(h.s.Turn.FirstMessage) != len(h.s.History)-1 {
				t.Errorf("firstMessage %d, want %d (the answer)", h.s.Turn.FirstMessage, len(h.s.History)-1)
			}
		})
	}
}

// TestHumanFirstTurn: a person's turn may open a conversation: answered,
// it ends Succeeded with their words as the transcript's first user
// message.
func TestHumanFirstTurn(t *testing.T) {
	run := MakeRun().Apply(func(r *exagentv1.AgentRun) {
		r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "conv", Participant: "alice"}
	})
	env := mustEnv(t, MakeAgent().Spec(), run.Spec())
	h := turnOn(t, env, TurnStart{Index: 1, Human: &exagentv1.Approvers{Users: []string{"alice"}}})
	a := h.s.Approvals[0]
	h.decide(DecisionCmd{OperationID: "op", Name: "op", Decision: exagentv1.DecisionAnswer, ApprovalID: a.ID,
		PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: actor("alice"), Answer: `"let's begin"`})
	h.claim(w1)
	if act := h.step(); act.Kind != ActFinish || h.s.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("action %s, phase %s %s: want the first turn ended", act.Kind, h.s.Phase, h.s.Message)
	}
	if last := h.s.History[len(h.s.History)-1]; last.Content != "[alice] let's begin" {
		t.Errorf("last message %q", last.Content)
	}
}

// TestEndConversation: the builtin ends the conversation without IO (an
// Ask rule pauses it first); outside a conversation it fails; a final
// answer with the endMarker ends it too.
func TestEndConversation(t *testing.T) {
	turn := func(r *exagentv1.AgentRun) { r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "conv"} }
	for _, tc := range []struct {
		name    string
		run     func(*exagentv1.AgentRun)
		policy  exagentv1.PolicyAction
		marker  string
		resp    []ModelResponse
		wantEnd string
	}{
		{"tool", turn, exagentv1.PolicyAllow, "", []ModelResponse{tools(call("e1", "end", `{}`)), text("bye")}, exagentv1.EndedByTool},
		{"tool asks", turn, exagentv1.PolicyAsk, "", []ModelResponse{tools(call("e1", "end", `{}`)), text("bye")}, exagentv1.EndedByTool},
		{"marker", turn, exagentv1.PolicyAllow, "[[done]]", []ModelResponse{text("all set [[done]]")}, exagentv1.EndedByMarker},
		{"no marker", turn, exagentv1.PolicyAllow, "[[done]]", []ModelResponse{text("more to do")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := mustEnv(t, MakeAgent().EndTool("end").Default(tc.policy).Spec(), MakeRun().Apply(tc.run).Spec())
			h := turnOn(t, env, TurnStart{Index: 1, EndMarker: tc.marker})
			h.claim(w1)
			for _, r := range tc.resp {
				h.step()
				h.respond(r)
				if act := h.step(); act.Kind == ActPause {
					h.approveAll()
					h.claim(w1)
					if act := h.step(); act.Kind == ActRunTools {
						t.Fatalf("EndConversation dispatched as IO: %+v", act.Calls)
					}
				} else if act.Kind == ActRunTools {
					t.Fatalf("EndConversation dispatched as IO: %+v", act.Calls)
				}
			}
			if h.s.Phase != exagentv1.PhaseSucceeded || h.s.Turn.EndedConversation != tc.wantEnd {
				t.Errorf("phase %s, endedConversation %q: want Succeeded, %q", h.s.Phase, h.s.Turn.EndedConversation, tc.wantEnd)
			}
		})
	}
	env := mustEnv(t, MakeAgent().EndTool("end").Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("e1", "end", `{}`)))
	h.step()
	if h.callState("e1") != exagentv1.CallFailed {
		t.Errorf("EndConversation outside a conversation: %s, want Failed", h.callState("e1"))
	}
}
