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

package webhook_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

func answer(edit func(*exagentv1.ApprovalDecision)) *exagentv1.ApprovalDecision {
	return decision(func(d *exagentv1.ApprovalDecision) {
		d.Spec.Decision = exagentv1.DecisionAnswer
		d.Spec.Answer = &runtime.RawExtension{Raw: []byte(`"eu"`)}
		if edit != nil {
			edit(d)
		}
	})
}

// TestValidateAnswerShape: an Answer names its question and carries an
// answer exactly when its action is Accept; answer and action belong to
// Answer alone; the refusal names the field.
func TestValidateAnswerShape(t *testing.T) {
	cases := map[string]struct {
		d    *exagentv1.ApprovalDecision
		want []string
	}{
		"a text answer":    {d: answer(nil)},
		"an object answer": {d: answer(func(d *exagentv1.ApprovalDecision) { d.Spec.Answer.Raw = []byte(`{"cluster":"eu"}`) })},
		"decline":          {d: answer(func(d *exagentv1.ApprovalDecision) { d.Spec.Answer, d.Spec.Action = nil, exagentv1.AnswerDecline })},
		"needs the question": {d: answer(func(d *exagentv1.ApprovalDecision) { d.Spec.ApprovalID = "" }),
			want: []string{"FieldValueRequired spec.approvalID"}},
		"accept needs an answer": {d: answer(func(d *exagentv1.ApprovalDecision) { d.Spec.Answer = nil }),
			want: []string{"FieldValueRequired spec.answer"}},
		"decline carries none": {d: answer(func(d *exagentv1.ApprovalDecision) { d.Spec.Action = exagentv1.AnswerDecline }),
			want: []string{"FieldValueForbidden spec.answer"}},
		"unknown action": {d: answer(func(d *exagentv1.ApprovalDecision) { d.Spec.Action = "Shrug" }),
			want: []string{"FieldValueNotSupported spec.action"}},
		"not JSON": {d: answer(func(d *exagentv1.ApprovalDecision) { d.Spec.Answer.Raw = []byte(`{"a":`) }),
			want: []string{"FieldValueInvalid spec.answer"}},
		"too large": {d: answer(func(d *exagentv1.ApprovalDecision) {
			d.Spec.Answer.Raw = []byte(`"` + strings.Repeat("x", exagentv1.MaxValueBytes) + `"`)
		}), want: []string{"FieldValueTooLong spec.answer"}},
		"answer on an approve": {d: decision(func(d *exagentv1.ApprovalDecision) {
			d.Spec.Answer, d.Spec.Action = &runtime.RawExtension{Raw: []byte(`1`)}, exagentv1.AnswerAccept
		}), want: []string{"FieldValueForbidden spec.answer", "FieldValueForbidden spec.action"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, errKeys(webhook.ValidateApprovalDecision(tc.d, nil))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateAnswerTarget: against the run, an Answer must name a pending
// question and match its journaled schema; an Approve or Deny of a
// question, and an Answer of an approval, are refused with what to do.
func TestValidateAnswerTarget(t *testing.T) {
	run := &exagentv1.AgentRun{}
	run.Name = "r"
	run.Status.Phase = exagentv1.PhaseAwaitingApproval
	run.Status.Revision = 1
	run.Status.Calls = []exagentv1.ToolCall{{ID: "q1", Tool: "ask_human", State: exagentv1.CallPending}, {ID: "p1", Tool: "pay", State: exagentv1.CallPending}}
	run.Status.Approvals = []exagentv1.Approval{
		{ID: "q1-r1", CallID: "q1", Kind: exagentv1.KindQuestion, PayloadHash: "sha256:q", Revision: 1, State: exagentv1.ApprovalPending,
			Question: &exagentv1.Question{Source: exagentv1.QuestionAskHuman, Text: "Where?", Schema: `{"enum":["eu","us"],"type":"string"}`}},
		{ID: "p1-r1", CallID: "p1", PayloadHash: "sha256:p", Revision: 1, State: exagentv1.ApprovalPending},
	}
	on := func(id string, kind exagentv1.DecisionKind, ans string) *exagentv1.ApprovalDecision {
		return decision(func(d *exagentv1.ApprovalDecision) {
			d.Spec.RunRef.Name, d.Spec.ApprovalID, d.Spec.Decision, d.Spec.Revision = "r", id, kind, 1
			d.Spec.PayloadHash = run.Status.Approval(id).PayloadHash
			if ans != "" {
				d.Spec.Answer = &runtime.RawExtension{Raw: []byte(ans)}
			}
		})
	}
	cases := map[string]struct {
		d    *exagentv1.ApprovalDecision
		want string // "" = admitted
	}{
		"a valid answer":           {d: on("q1-r1", exagentv1.DecisionAnswer, `"us"`)},
		"not one of the choices":   {d: on("q1-r1", exagentv1.DecisionAnswer, `"mars"`), want: "spec.answer: Invalid value: the answer does not match the question's schema: at the top level: value must be one of"},
		"an approve of a question": {d: on("q1-r1", exagentv1.DecisionApprove, ""), want: "spec.decision: Invalid value: \"Approve\": q1-r1 is a question"},
		"a deny of a question":     {d: on("q1-r1", exagentv1.DecisionDeny, ""), want: "kubectl approve answer r q1-r1"},
		"an answer of an approval": {d: on("p1-r1", exagentv1.DecisionAnswer, `"x"`), want: "asks for a yes or no, not an answer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := webhook.ValidateDecisionTarget(tc.d, run)
			errs = append(errs, webhook.ValidateDecisionAnswer(tc.d, run)...)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("got %v, want a refusal containing %q", got, tc.want)
			}
		})
	}
}

// TestValidateAskHumanTool: an AskHuman tool touches no kinds or Secrets,
// and its answerSchema must be a usable, self-contained JSON Schema small
// enough to journal with every question; the refusal names where.
func TestValidateAskHumanTool(t *testing.T) {
	ask := func(edit func(*exagentv1.BuiltinTool)) *exagentv1.Agent {
		return agent(func(a *exagentv1.Agent) {
			b := &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinAskHuman}
			if edit != nil {
				edit(b)
			}
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "ask_human", Builtin: b})
		})
	}
	schema := func(s string) func(*exagentv1.BuiltinTool) {
		return func(b *exagentv1.BuiltinTool) { b.AnswerSchema = &runtime.RawExtension{Raw: []byte(s)} }
	}
	cases := map[string]struct {
		agent *exagentv1.Agent
		want  []string
	}{
		"free text":       {agent: ask(nil)},
		"with a schema":   {agent: ask(schema(`{"type":"object","properties":{"cluster":{"enum":["eu","us"]}}}`))},
		"a string schema": {agent: ask(schema(`{"type":"string","maxLength":10}`))},
		"kinds": {agent: ask(func(b *exagentv1.BuiltinTool) { b.Kinds = []string{"ConfigMap"} }),
			want: []string{"FieldValueForbidden spec.tools[1].builtin.kinds"}},
		"allowSecrets": {agent: ask(func(b *exagentv1.BuiltinTool) { b.AllowSecrets = true }),
			want: []string{"FieldValueForbidden spec.tools[1].builtin.allowSecrets"}},
		"not a schema": {agent: ask(schema(`[1,2]`)),
			want: []string{"FieldValueInvalid spec.tools[1].builtin.answerSchema"}},
		"a remote ref": {agent: ask(schema(`{"$ref":"https://evil.example/s.json"}`)),
			want: []string{"FieldValueInvalid spec.tools[1].builtin.answerSchema"}},
		"a bad keyword value": {agent: ask(schema(`{"type":"string","minLength":-1}`)),
			want: []string{"FieldValueInvalid spec.tools[1].builtin.answerSchema.minLength"}},
		"too large": {agent: ask(schema(`{"enum":["` + strings.Repeat("x", 17000) + `"]}`)),
			want: []string{"FieldValueTooLong spec.tools[1].builtin.answerSchema"}},
		"EndConversation": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "end", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinEndConversation}})
		})},
		"EndConversation with kinds": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "end", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinEndConversation, Kinds: []string{"ConfigMap"}, AllowSecrets: true}})
		}), want: []string{"FieldValueForbidden spec.tools[1].builtin.kinds", "FieldValueForbidden spec.tools[1].builtin.allowSecrets"}},
		"Sleep": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "nap", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinSleep}})
		})},
		"Sleep with kinds, secrets and an answer schema": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "nap", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinSleep, Kinds: []string{"ConfigMap"}, AllowSecrets: true,
				AnswerSchema: &runtime.RawExtension{Raw: []byte(`{}`)}}})
		}), want: []string{"FieldValueForbidden spec.tools[1].builtin.answerSchema", "FieldValueForbidden spec.tools[1].builtin.kinds",
			"FieldValueForbidden spec.tools[1].builtin.allowSecrets"}},
		"WaitFor": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "wait", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinWaitFor, Kinds: []string{"Deployment.apps", "ConfigMap"}}})
		})},
		"WaitFor without kinds": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "wait", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinWaitFor}})
		}), want: []string{"FieldValueRequired spec.tools[1].builtin.kinds"}},
		"WaitFor on Secrets, even allowed": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "wait", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinWaitFor, Kinds: []string{"Secret"}, AllowSecrets: true}})
		}), want: []string{"FieldValueForbidden spec.tools[1].builtin.allowSecrets", "FieldValueForbidden spec.tools[1].builtin.kinds[0]"}},
		"WaitFor with an answer schema": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "wait", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinWaitFor, Kinds: []string{"ConfigMap"}, AnswerSchema: &runtime.RawExtension{Raw: []byte(`{}`)}}})
		}), want: []string{"FieldValueForbidden spec.tools[1].builtin.answerSchema"}},
		"NewCallback and WaitForCallback": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools,
				exagentv1.ToolSpec{Name: "mk", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinNewCallback}},
				exagentv1.ToolSpec{Name: "wait", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinWaitForCallback}})
		})},
		"NewCallback with kinds, secrets and an answer schema": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "mk", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinNewCallback, Kinds: []string{"ConfigMap"}, AllowSecrets: true,
				AnswerSchema: &runtime.RawExtension{Raw: []byte(`{}`)}}})
		}), want: []string{"FieldValueForbidden spec.tools[1].builtin.answerSchema", "FieldValueForbidden spec.tools[1].builtin.kinds",
			"FieldValueForbidden spec.tools[1].builtin.allowSecrets"}},
		"WaitForCallback with kinds": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "wait", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinWaitForCallback, Kinds: []string{"ConfigMap"}}})
		}), want: []string{"FieldValueForbidden spec.tools[1].builtin.kinds"}},
		"answerSchema on another operation": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "get", Builtin: &exagentv1.BuiltinTool{
				Operation: exagentv1.BuiltinGet, Kinds: []string{"ConfigMap"}, AnswerSchema: &runtime.RawExtension{Raw: []byte(`{}`)}}})
		}), want: []string{"FieldValueForbidden spec.tools[1].builtin.answerSchema"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, errKeys(webhook.ValidateAgent(tc.agent, nil))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
