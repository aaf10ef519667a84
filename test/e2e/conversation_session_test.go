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

// TestConversationSession: a RoundRobin session of an Agent and a human
// participant against the running manager. A person applies turn 1; the
// manager creates turn 2, the human participant's, which asks them at
// once (no model request); alice — an approver of the Agent, not the
// participant — is refused; dave answers with `kubectl approve answer`;
// the manager creates turn 3, whose transcript carries dave's words, and
// the session ends at maxTurns. `logs CONV` prints every turn.
func TestConversationSession(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-session")
	bindApprovers(t, ns)
	must(t, "", `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: answerer, namespace: `+ns+`}
rules:
- {apiGroups: [exagent.io], resources: [agents/approval], verbs: [answer]}
- {apiGroups: [exagent.io], resources: [approvaldecisions], verbs: [create, get, list, watch]}
- {apiGroups: [exagent.io], resources: [agents, agentruns, agentrunsegments, conversations], verbs: [get, list, watch]}
`, "apply", "-f", "-")
	must(t, "", "", "create", "rolebinding", "dave-answers", "-n", ns, "--role=answerer", "--user=dave")
	must(t, "", fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: planner, namespace: %[1]s}
spec:
  instructions: You plan rollouts.
  model:
    provider: Scripted
    script:
    - text: "plan: canary first"
---
apiVersion: exagent.io/v1alpha1
kind: Conversation
metadata: {name: rollout, namespace: %[1]s}
spec:
  agentRef: {name: planner}
  turnPolicy: RoundRobin
  limits: {maxTurns: 3}
  participants:
  - {name: planner, agentRef: {name: planner}}
  - {name: oncall, human: {users: [dave]}}
---
apiVersion: exagent.io/v1alpha1
kind: AgentRun
metadata: {name: rollout-t1, namespace: %[1]s}
spec:
  agentRef: {name: planner}
  input: plan the rollout of v2
  conversationRef: {name: rollout}
`, ns), "apply", "-f", "-")

	asked := waitPaused(t, ns, "rollout-t2")
	if asked.Status.Ledger.Requests != 0 || len(asked.Status.Approvals) != 1 || !asked.Status.Approvals[0].IsQuestion() {
		t.Fatalf("turn 2: %d model requests, approvals %+v; want the participant's question at once", asked.Status.Ledger.Requests, asked.Status.Approvals)
	}
	if !strings.Contains(asked.Status.Approvals[0].Question.Text, "plan: canary first") {
		t.Errorf("the question does not show the last answer: %q", asked.Status.Approvals[0].Question.Text)
	}
	wantStderr(t, mustFail(t, "alice", "approve", "answer", "rollout-t2", "-n", ns, "--text", "ship it"),
		"not among the people of participant oncall")
	must(t, "dave", "", "approve", "answer", "rollout-t2", "-n", ns, "--text", "canary in eu only")

	third := waitDone(t, ns, "rollout-t3")
	if third.Status.Phase != exagentv1.PhaseSucceeded || third.Spec.RequestedBy == nil || third.Spec.RequestedBy.Username != getRun(t, ns, "rollout-t1").Spec.RequestedBy.Username {
		t.Fatalf("turn 3: %s %s, requester %+v; want Succeeded for turn 1's requester", third.Status.Phase, third.Status.Message, third.Spec.RequestedBy)
	}
	var heard bool
	for _, m := range third.Status.History {
		heard = heard || m.Role == exagentv1.RoleUser && m.Content == "[oncall] canary in eu only"
	}
	if !heard {
		t.Errorf("turn 3's transcript lacks dave's words: %+v", third.Status.History)
	}
	must(t, "", "", "wait", "conversation/rollout", "-n", ns, "--for=jsonpath={.status.phase}=Ended", "--timeout=2m")
	if r := kubectl(t, "", "", "get", "agentrun", "rollout-t4", "-n", ns); r.Err == nil {
		t.Errorf("a fourth turn exists past maxTurns: %s", r.Stdout)
	}
	logs := must(t, "", "", "approve", "logs", "rollout", "-n", ns)
	for _, want := range []string{"turn 1: rollout-t1", "turn 2: rollout-t2", "turn 3: rollout-t3", "answered by dave", "participant oncall took turn 2", "[user] [oncall] canary in eu only"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs rollout lacks %q:\n%s", want, logs)
		}
	}
}
