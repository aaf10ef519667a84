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
	"encoding/json"
	"fmt"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// A human participant's turn (DESIGN §18) is a question, not a model
// request: when the turn starts it pauses at once — no claim, no worker,
// no model — with one request of kind Question (source Participant) that
// only the participant's people may answer (Question.answerers stand in
// for the Agent's policy.approvers: PolicyFor). Their answer is what they
// say in the conversation: a user message naming them, and the turn's
// output; the turn then ends Succeeded without a model request. Declining
// passes the turn (said in the transcript, so the next participant knows).

// participantCallID is the id of a human turn's one call.
func participantCallID(index int32) string { return fmt.Sprintf("turn-%d", index) }

// askParticipant pauses a human turn with its question: prompt is the
// turn's input, shown with the conversation's last answer.
func askParticipant(st *Status, env *Env, prompt string, prev *PrevTurn, people *exagentv1.Approvers, now time.Time) error {
	who := st.Turn.Participant
	text := prompt
	if last := lastAnswer(prev); last != "" {
		text = fmt.Sprintf("%s\n\nThe conversation's last message (turn %s):\n%s", prompt, prev.Name, last)
	}
	text = truncateUTF8(text, maxQuestionText)
	args, err := canonical.JSON(map[string]string{"question": text})
	if err != nil {
		return invalidf("the question of participant %s: %v", who, err)
	}
	st.Turn.Human = true
	st.Cursor = exagentv1.Cursor{Step: 0, Stage: exagentv1.StageBatch}
	st.Calls = append(st.Calls, exagentv1.ToolCall{
		ID: participantCallID(st.Turn.Index), Step: 0, Tool: who, Args: string(args),
		State: exagentv1.CallPending, PayloadHash: canonical.Hash(args),
	})
	created, err := pause(st, env, now)
	if err != nil {
		return err
	}
	a := &st.Approvals[len(st.Approvals)-1]
	a.Kind, a.Quorum = exagentv1.KindQuestion, nil
	a.Question = &exagentv1.Question{Source: exagentv1.QuestionParticipant, Text: text, Schema: freeTextSchema,
		Answerers: people.DeepCopy()}
	users := strings.Join(append(append([]string(nil), people.Users...), people.Groups...), ", ")
	st.Message = bound(fmt.Sprintf("waiting for participant %s (%s) to take turn %d: kubectl approve answer %s %s 'TEXT'",
		who, users, st.Turn.Index, env.in.RunName, created[0].ID), maxMessage)
	return nil
}

// lastAnswer is the last assistant (or participant) message prev's tail
// holds in status ("" when it is sealed or there is none).
func lastAnswer(prev *PrevTurn) string {
	if prev == nil {
		return ""
	}
	for i := len(prev.History) - 1; i >= 0; i-- {
		m := prev.History[i]
		if m.Role == exagentv1.RoleAssistant || m.Role == exagentv1.RoleUser {
			return truncateUTF8(m.Content, maxQuestionText/2)
		}
	}
	return ""
}

// driveParticipant ends a human turn whose question was answered (ok
// false while it was not): the answer joins the transcript as what the
// participant said, and is the turn's output; a declined or dismissed
// question passes the turn, said in the transcript.
func driveParticipant(st *Status, env *Env, now time.Time) (Action, bool) {
	i := findCall(st, participantCallID(st.Turn.Index))
	if i < 0 || unresolved(&st.Calls[i]) || st.Calls[i].Outcome == nil {
		return Action{}, false
	}
	c := &st.Calls[i]
	who := st.Turn.Participant
	said := c.Outcome.Result
	var text string
	if c.State == exagentv1.CallSucceeded {
		var s string
		if json.Unmarshal([]byte(said), &s) == nil {
			said = s // free text: the answer is a JSON string
		}
		text = fmt.Sprintf("[%s] %s", who, said)
	} else {
		said = fmt.Sprintf("%s passed the turn: %s", who, said)
		text = "[" + who + "] (passed the turn) " + c.Outcome.Result
	}
	appendMessage(st, exagentv1.Message{Role: exagentv1.RoleUser, Content: bound(text, maxContent)})
	st.Output = bound(said, maxContent)
	st.Cursor = exagentv1.Cursor{Step: 1, Stage: exagentv1.StageFinish}
	releaseClaim(st, env, now)
	setPhase(st, exagentv1.PhaseSucceeded, exagentv1.ReasonSucceeded, fmt.Sprintf("participant %s took turn %d", who, st.Turn.Index))
	return Action{Kind: ActFinish, Output: st.Output}, true
}

// PolicyFor is the policy that says who may decide on approval id of a
// run: a human participant's question is answered by its answerers alone
// (they take their turn: forbidSelfApproval does not apply), any other by
// the Agent's policy.
func PolicyFor(policy exagentv1.PolicySpec, s *Status, id string) exagentv1.PolicySpec {
	for i := range s.Approvals {
		a := &s.Approvals[i]
		if a.ID != id || a.Question == nil || a.Question.Source != exagentv1.QuestionParticipant || a.Question.Answerers == nil {
			continue
		}
		p := *policy.DeepCopy()
		p.Approvers, p.ForbidSelfApproval = a.Question.Answerers.DeepCopy(), false
		return p
	}
	return policy
}

// AuthorizeDecision is Authorize under PolicyFor: a decider who is not
// among a participant's people is told whose turn it is.
func AuthorizeDecision(policy exagentv1.PolicySpec, s *Status, approvalID string, run *exagentv1.AgentRunSpec, ids Identities, actor exagentv1.Actor) error {
	p := PolicyFor(policy, s, approvalID)
	err := Authorize(p, run, ids, actor)
	e, ok := AsError(err)
	if !ok || e.Reason != exagentv1.ReasonNotAnApprover {
		return err
	}
	for i := range s.Approvals {
		a := &s.Approvals[i]
		if a.ID != approvalID || a.Question == nil || a.Question.Source != exagentv1.QuestionParticipant {
			continue
		}
		who := a.CallID
		if j := findCall(s, a.CallID); j >= 0 {
			who = s.Calls[j].Tool
		}
		return errorf(KindForbidden, exagentv1.ReasonNotAnApprover,
			"user %q is not among the people of participant %s (users: %s, groups: %s): the turn is theirs to take",
			actor.Username, who, listString(p.Approvers.Users), listString(p.Approvers.Groups))
	}
	return err
}
