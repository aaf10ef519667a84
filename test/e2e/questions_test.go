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

package e2e

import (
	"fmt"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// askAgent is an Agent on the Scripted model whose one tool is the builtin
// AskHuman tool ask_human (answers must match answerSchema, when given):
// the script asks args once, then says done.
func askAgent(ns, name, answerSchema, args string) string {
	schema := ""
	if answerSchema != "" {
		schema = ", answerSchema: " + answerSchema
	}
	return fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata:
  name: %s
  namespace: %s
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - {id: q1, name: ask_human, arguments: %s}
    - text: done
  tools:
  - name: ask_human
    description: Ask a person.
    builtin: {operation: AskHuman%s}
  policy:
    default: Deny
    rules:
    - {name: may-ask, tools: [ask_human], action: Allow}
`, name, ns, args, schema)
}

// TestAskHuman: the model asks a person which cluster; the run pauses
// with the question (list and show print it). bob, without the verb
// answer, is refused; an answer outside the question's schema is refused
// at admission with the validator's finding; alice's answer is what the
// model reads next, and the run Succeeds. A Role with only the verb
// answer lets dave decline another question, which the model is told;
// Approve of a question is refused with a pointer to answer.
func TestAskHuman(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ask")
	bindApprovers(t, ns)
	must(t, "", "", "create", "rolebinding", "bob-views", "-n", ns, "--clusterrole=exagent-viewer", "--user=bob")
	schema := "{type: object, properties: {cluster: {type: string, enum: [eu, us]}, ticket: {type: integer}}, required: [cluster]}"
	must(t, "", askAgent(ns, "asker", schema, `{question: "Which cluster should I drain?"}`)+"---\n"+runYAML(ns, "ask", "asker"), "apply", "-f", "-")
	paused := waitPaused(t, ns, "ask")
	if len(paused.Status.Approvals) != 1 || !paused.Status.Approvals[0].IsQuestion() {
		t.Fatalf("paused with %+v, want one question", paused.Status.Approvals)
	}
	q := paused.Status.Approvals[0]
	if list := must(t, "alice", "", "approve", "list", "-n", ns); !strings.Contains(list, "question: Which cluster should I drain?") {
		t.Errorf("list does not print the question:\n%s", list)
	}
	show := must(t, "alice", "", "approve", "show", "ask", "-n", ns)
	for _, want := range []string{"Question " + q.ID + " (Pending)", "Which cluster should I drain?", `"enum"`, "kubectl approve answer ask " + q.ID} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}

	wantStderr(t, mustFail(t, "alice", "approve", "ask", "-n", ns), "waits for an answer, not an approval", "kubectl approve answer")
	wantStderr(t, mustFail(t, "bob", "approve", "answer", "ask", "-n", ns, "--set", "cluster=eu"), "answer on agents/approval")
	wantStderr(t, mustFail(t, "alice", "approve", "answer", "ask", "-n", ns, "--set", "cluster=mars"),
		"spec.answer", "the answer does not match the question's schema", "/cluster")
	wantStderr(t, mustFail(t, "alice", "approve", "answer", "ask", "-n", ns, "--text", "eu"),
		"spec.answer", "the answer does not match the question's schema", "want object")

	out := must(t, "alice", "", "approve", "answer", "ask", "-n", ns, "--set", "cluster=eu", "--set", "ticket=4711")
	if !strings.Contains(out, "question "+q.ID+" answered by alice") {
		t.Errorf("answer printed %q", out)
	}
	final := waitDone(t, ns, "ask")
	if final.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s", final.Status.Phase, final.Status.Message)
	}
	var seen bool
	for _, m := range final.Status.History {
		seen = seen || (m.Role == exagentv1.RoleTool && m.ToolCallID == "q1" && m.Content == `{"cluster":"eu","ticket":4711}`)
	}
	if !seen {
		t.Errorf("the model did not read the answer: %+v", final.Status.History)
	}
	a := final.Status.Approval(q.ID)
	if a == nil || a.State != exagentv1.ApprovalAnswered || a.Actor == nil || a.Actor.Username != "alice" || a.Question.Answer != `{"cluster":"eu","ticket":4711}` {
		t.Fatalf("question after the answer: %+v", a)
	}
	if logs := must(t, "alice", "", "approve", "logs", "ask", "-n", ns); !strings.Contains(logs, "question "+q.ID+" answered by alice") {
		t.Errorf("logs do not say who answered:\n%s", logs)
	}
	if len(final.Status.Receipts) != 1 || final.Status.Receipts[0].AnswerHash == "" {
		t.Errorf("receipts %+v, want one with the answer's hash", final.Status.Receipts)
	}

	// A Role with only the verb answer: dave answers, and may not approve.
	must(t, "", `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: answerer, namespace: `+ns+`}
rules:
- {apiGroups: [exagent.io], resources: [agents/approval], verbs: [answer]}
- {apiGroups: [exagent.io], resources: [approvaldecisions], verbs: [create, get, list, watch]}
- {apiGroups: [exagent.io], resources: [agents, agentruns, agentrunsegments], verbs: [get, list, watch]}
`, "apply", "-f", "-")
	must(t, "", "", "create", "rolebinding", "dave-answers", "-n", ns, "--role=answerer", "--user=dave")
	must(t, "", askAgent(ns, "free", "", `{question: "Refund reason?"}`)+"---\n"+runYAML(ns, "free-ask", "free"), "apply", "-f", "-")
	waitPaused(t, ns, "free-ask")
	out = must(t, "dave", "", "approve", "answer", "free-ask", "-n", ns, "--decline", "--reason", "ask the payments team")
	if !strings.Contains(out, "declined by dave") {
		t.Errorf("decline printed %q", out)
	}
	final = waitDone(t, ns, "free-ask")
	if final.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("declined run %s: %s", final.Status.Phase, final.Status.Message)
	}
	var told bool
	for _, m := range final.Status.History {
		told = told || (m.ToolCallID == "q1" && strings.Contains(m.Content, "dave declined to answer: ask the payments team"))
	}
	if !told {
		t.Errorf("the model was not told of the decline: %+v", final.Status.History)
	}
}
