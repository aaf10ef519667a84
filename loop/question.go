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

// Questions for a human (docs/architecture.md §16). A call of a builtin
// AskHuman tool touches nothing: unless the policy denies it, it pauses
// the run like a call that needs approval, with a request of kind Question
// that journals the question's text, the choices offered and the JSON
// Schema every answer must match. An Answer decision (kubectl approve
// answer) closes the call with the answer as its result — or, declined or
// cancelled, with a result that says so — and the run goes on.

// defaultAskParameters is the parameters schema of an AskHuman tool that
// declares none: what the model passes is the question and, optionally,
// the choices it offers, within what a question journals.
var defaultAskParameters = fmt.Sprintf(`{"type":"object","properties":{`+
	`"question":{"type":"string","minLength":1,"maxLength":%d,"description":"The question for a person, self-contained: they see only this text and the choices."},`+
	`"choices":{"type":"array","maxItems":%d,"items":{"type":"string","minLength":1,"maxLength":%d},"description":"The answers to choose from, when the answer is one of a few."}},`+
	`"required":["question"],"additionalProperties":false}`, maxQuestionText, maxChoices, maxChoice)

// freeTextSchema is the answer schema of a question with no schema and no
// choices: any non-empty text.
const freeTextSchema = `{"type":"string","minLength":1,"maxLength":16384}`

// isAskHuman reports whether calls of tool ask a person.
func (e *Env) isAskHuman(tool string) bool {
	t := e.tool(tool)
	return t != nil && t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinAskHuman
}

// questionOf is the question a call of an AskHuman tool asks: its text
// and choices from the arguments, and the schema of its answers — the
// tool's answerSchema, else one of the choices, else free text.
func (e *Env) questionOf(c *exagentv1.ToolCall) (*exagentv1.Question, error) {
	var args struct {
		Question any   `json:"question"`
		Choices  []any `json:"choices"`
	}
	_ = json.Unmarshal([]byte(c.Args), &args) // the schema admitted the args; a custom one may shape them otherwise
	q := &exagentv1.Question{Source: exagentv1.QuestionAskHuman}
	if text, ok := args.Question.(string); ok {
		q.Text = text
	} else {
		q.Text = c.Args // a custom parameters schema: the person sees what the model sent
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, fmt.Errorf("the question is empty")
	}
	q.Text = truncateUTF8(q.Text, maxQuestionText)
	for _, ch := range args.Choices {
		if s, ok := ch.(string); ok && s != "" && len(q.Choices) < maxChoices {
			q.Choices = append(q.Choices, truncateUTF8(s, maxChoice))
		}
	}
	schema := []byte(freeTextSchema)
	switch t := e.tool(c.Tool); {
	case t.Builtin.AnswerSchema != nil && len(t.Builtin.AnswerSchema.Raw) > 0:
		schema = t.Builtin.AnswerSchema.Raw
	case len(q.Choices) > 0:
		enum, err := json.Marshal(q.Choices)
		if err != nil {
			return nil, err
		}
		schema = []byte(`{"type":"string","enum":` + string(enum) + `}`)
	}
	canon, err := canonical.JSON(json.RawMessage(schema))
	if err != nil {
		return nil, fmt.Errorf("the answer schema is not JSON: %w", err)
	}
	if len(canon) > maxAnswerSchema {
		return nil, fmt.Errorf("the answer schema takes %d bytes, more than %d", len(canon), maxAnswerSchema)
	}
	if _, err := CompileArgSchema(canon); err != nil {
		return nil, fmt.Errorf("the answer schema is not a usable JSON Schema: %w", err)
	}
	q.Schema = string(canon)
	return q, nil
}

// admitQuestion admits a proposed call of an AskHuman tool: the policy may
// deny it (an Agent may forbid asking); otherwise it waits for an answer —
// never allowed without one, never covered by a grant.
func admitQuestion(c *exagentv1.ToolCall, env *Env, action exagentv1.PolicyAction, rule string) {
	if action == exagentv1.PolicyDeny {
		refuse(c, rule)
		return
	}
	if _, err := env.questionOf(c); err != nil {
		c.State = exagentv1.CallFailed
		c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf(
			"%s: the question cannot be asked: %v. Nobody was asked.", exagentv1.ReasonInvalidArguments, err), maxContent)}
		return
	}
	c.State = exagentv1.CallPending
}

// askOf fills a request created by pause for call c: a question when c
// asks a person. The question was checked when the call was admitted.
func (e *Env) askOf(a *exagentv1.Approval, c *exagentv1.ToolCall) {
	if !e.isAskHuman(c.Tool) {
		return
	}
	q, err := e.questionOf(c)
	if err != nil {
		q = &exagentv1.Question{Source: exagentv1.QuestionAskHuman, Text: truncateUTF8(c.Args, maxQuestionText), Schema: freeTextSchema}
	}
	a.Kind, a.Question, a.Quorum = exagentv1.KindQuestion, q, nil
}

// Answer records a person's answer to one pending question. Accept
// validates the answer against the question's journaled schema and closes
// the call with it (the answer, as JSON, is the tool's result); Decline
// and Cancel close the call with a result that tells the asker nobody
// answered. The run resumes once nothing is pending.
//
// Touches: the question (state Answered, action, answer, actor, reason),
// its call (Succeeded with the answer; Denied when declined or
// cancelled), receipts, pendingApprovals, phase/reason/message.
// Guards: as Approve (findPendingApproval: revision, payload hash, expiry,
// deadline); the request is a question; the answer matches its schema.
func Answer(s Status, env *Env, d DecisionCmd, now time.Time) (Status, exagentv1.Receipt, error) {
	dec, replay, err := prepare(&s, env, d, exagentv1.DecisionAnswer, now)
	if replay != nil || err != nil {
		return s, receiptOf(replay), err
	}
	i, err := findPendingApproval(&s, env, dec.cmd, now)
	if err != nil {
		return s, exagentv1.Receipt{}, err
	}
	answer, err := checkAnswer(&s.Approvals[i], dec.cmd)
	if err != nil {
		return s, exagentv1.Receipt{}, err
	}
	st := clone(s)
	a := decideApproval(&st, i, dec, exagentv1.ApprovalAnswered)
	action := answerAction(dec.cmd.Action)
	a.Question.Action, a.Question.Answer = action, answer
	c := &st.Calls[findCall(&st, a.CallID)]
	who := actorString(a.Actor)
	var what string
	if isMCPQuestion(a) {
		// The server asked: the answer goes back to it with the retry
		// once every question of the call is answered (mcpinput.go).
		answerInput(&st, c)
		verb := map[exagentv1.AnswerAction]string{exagentv1.AnswerAccept: "answered", exagentv1.AnswerDecline: "declined",
			exagentv1.AnswerCancel: "dismissed"}[action]
		afterDecision(&st, fmt.Sprintf("question %s (%s) %s by %s", a.ID, c.Tool, verb, who))
		return commitDecision(s, st, env, dec)
	}
	if action == exagentv1.AnswerAccept {
		c.State = exagentv1.CallSucceeded
		c.Outcome = &exagentv1.CallOutcome{Succeeded: true, Result: answer, At: microTimePtr(now)}
		what = fmt.Sprintf("question %s answered by %s", a.ID, who)
	} else {
		verb := "declined to answer"
		if action == exagentv1.AnswerCancel {
			verb = "dismissed the question without answering"
		}
		text := fmt.Sprintf("%s %s", who, verb)
		if a.Reason != "" {
			text += ": " + a.Reason
		}
		c.State = exagentv1.CallDenied
		c.Outcome = &exagentv1.CallOutcome{Result: bound(text+". No answer was given.", maxContent), At: microTimePtr(now)}
		what = fmt.Sprintf("question %s: %s %s", a.ID, who, verb)
	}
	afterDecision(&st, what)
	return commitDecision(s, st, env, dec)
}

func answerAction(a exagentv1.AnswerAction) exagentv1.AnswerAction {
	if a == "" {
		return exagentv1.AnswerAccept
	}
	return a
}

// checkAnswer checks an Answer against question a: it is a question, the
// action is one of MCP's three, and an accepted answer is JSON that
// matches the question's schema. It returns the canonical answer ("" for
// Decline and Cancel).
func checkAnswer(a *exagentv1.Approval, d DecisionCmd) (string, error) {
	if !a.IsQuestion() {
		return "", conflictf("approval %q asks for a yes or no, not an answer: approve or deny it (kubectl approve %s / kubectl approve deny)",
			a.ID, a.ID)
	}
	switch answerAction(d.Action) {
	case exagentv1.AnswerAccept:
	case exagentv1.AnswerDecline, exagentv1.AnswerCancel:
		if d.Answer != "" {
			return "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "an answer with action %s carries no answer", d.Action)
		}
		return "", nil
	default:
		return "", conflictf("action %q is not Accept, Decline or Cancel", d.Action)
	}
	if d.Answer == "" {
		return "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "an answer with action Accept needs the answer")
	}
	canon, err := canonical.JSON(json.RawMessage(d.Answer))
	if err != nil {
		return "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "the answer is not JSON: %v", err)
	}
	if len(canon) > exagentv1.MaxValueBytes {
		return "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "the answer takes %d bytes, more than %d", len(canon), exagentv1.MaxValueBytes)
	}
	sch, err := CompileArgSchema([]byte(a.Question.Schema))
	if err != nil {
		return "", corruptf("question %q has an answer schema that does not compile: %v", a.ID, err)
	}
	if err := sch.Validate(string(canon)); err != nil {
		return "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "the answer does not match the question's schema: %v", err)
	}
	return string(canon), nil
}

// CheckAnswer is what admission checks of an Answer beyond its target,
// with the engine's own rules: the request is a question and the answer
// matches its journaled schema. A request that does not exist is left to
// the target check.
func CheckAnswer(s Status, d DecisionCmd) error {
	i := findApproval(&s, d.ApprovalID)
	if i < 0 {
		return nil
	}
	_, err := checkAnswer(&s.Approvals[i], d)
	return err
}

// notAnApproval refuses an Approve or Deny of a question.
func notAnApproval(a *exagentv1.Approval) error {
	if !a.IsQuestion() {
		return nil
	}
	return conflictf("approval %q is a question: answer it (kubectl approve answer RUN %s --text …), or decline it (--decline)", a.ID, a.ID)
}

// answerHash is what a receipt keeps of an Answer: its action and its
// canonical answer, so that a replay with another answer is a conflict.
func answerHash(action exagentv1.AnswerAction, answer string) (string, error) {
	var canon []byte
	if answer != "" {
		var err error
		if canon, err = canonical.JSON(json.RawMessage(answer)); err != nil {
			return "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "the answer is not JSON: %v", err)
		}
	}
	return canonical.Hash([]byte(string(answerAction(action)) + "\x00" + string(canon))), nil
}
