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
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// chargeAgent is an Agent on the Scripted model with the http tool charge
// (schema: customer string, amount integer ≤ 1000, both required) at url
// and a second tool notify (same server): turns are the script's tool-call
// turns (YAML lists of calls), then "done"; rules is the policy's rules.
func chargeAgent(ns, name, url, rules string, turns ...string) string {
	var script strings.Builder
	for _, calls := range turns {
		fmt.Fprintf(&script, "    - toolCalls:\n%s", calls)
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
%s    - text: done
  tools:
  - name: charge
    parameters: {type: object, properties: {customer: {type: string}, amount: {type: integer, maximum: 1000}}, required: [customer, amount]}
    http: {url: %q}
  - name: notify
    http: {url: %q}
  policy:
    default: Deny
    rules:
%s`, name, ns, script.String(), url+"/charge", url+"/notify", rules)
}

// chargeCall is one script call of charge.
func chargeCall(id string, amount int) string {
	return fmt.Sprintf("      - {id: %s, name: charge, arguments: {customer: c-42, amount: %d}}\n", id, amount)
}

// waitPaused waits until run pauses and returns it.
func waitPaused(t *testing.T, ns, run string) *exagentv1.AgentRun {
	t.Helper()
	must(t, "", "", "approve", "wait", run, "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	return getRun(t, ns, run)
}

func waitDone(t *testing.T, ns, run string) *exagentv1.AgentRun {
	t.Helper()
	must(t, "", "", "approve", "wait", run, "-n", ns, "--for=done", "--timeout="+waitTimeout)
	return getRun(t, ns, run)
}

func wantStderr(t *testing.T, stderr string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(stderr, w) {
			t.Errorf("the refusal %q lacks %q", stderr, w)
		}
	}
}

// TestEditThenApprove: alice edits the call before approving it. An edit
// the schema or the policy refuses is refused at admission with the
// validator's or the policy's words; a valid one runs once with exactly
// the edited arguments, the journal keeps the model's, and the model is
// shown the call as it ran; editable: false refuses edits.
func TestEditThenApprove(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-edit")
	bindApprovers(t, ns)
	srv := newEffectServer(t, false)
	rules := "    - {name: big, tools: [charge], action: Deny, when: 'args.amount > 500'}\n" +
		"    - {name: charges, tools: [charge], action: Ask}\n"
	must(t, "", chargeAgent(ns, "payments", srv.URL, rules, chargeCall("c1", 5))+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	paused := waitPaused(t, ns, "pay")
	model := paused.Status.Calls[0]

	wantStderr(t, mustFail(t, "alice", "approve", "pay", "-n", ns, "--set", "amount=lots"),
		"spec.arguments", "the edited arguments do not match the parameters schema of tool \"charge\"", "amount")
	wantStderr(t, mustFail(t, "alice", "approve", "pay", "-n", ns, "--set", "amount=2000"),
		"spec.arguments", "maximum")
	wantStderr(t, mustFail(t, "alice", "approve", "pay", "-n", ns, "--set", "amount=900"),
		"spec.arguments", "the policy denies the edited call (rule big)")
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("refused edits reached the tool server %d times", n)
	}

	out := must(t, "alice", "", "approve", "pay", "-n", ns, "--set", "amount=40", "--reason", "40 is what was agreed")
	if !strings.Contains(out, "approval c1-r1 approved with edited arguments by alice") {
		t.Errorf("approve --set printed %q", out)
	}
	final := waitDone(t, ns, "pay")
	if final.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s", final.Status.Phase, final.Status.Message)
	}
	if got := srv.received(); len(got) != 1 || !strings.Contains(got[0], `"amount":40`) || strings.Contains(got[0], `"amount":5`) {
		t.Errorf("the tool server received %q, want one request with the edited amount", got)
	}
	c := final.Status.Call("c1")
	if c == nil || c.Edit == nil || c.Edit.Editor.Username != "alice" || c.Edit.ModelArgs != model.Args ||
		c.Args != `{"amount":40,"customer":"c-42"}` || c.PayloadHash == model.PayloadHash {
		t.Fatalf("journal of c1 = %+v, want the edited args, a new payload hash and the model's args with the editor", c)
	}
	var shown, noted bool
	for _, m := range final.Status.History {
		for _, tc := range m.ToolCalls {
			shown = shown || (tc.ID == "c1" && tc.Arguments == c.Args)
		}
		noted = noted || (m.ToolCallID == "c1" && strings.HasPrefix(m.Content, "Note: before approving, alice edited the arguments of this call"))
	}
	if !shown || !noted {
		t.Errorf("the transcript the model reads shows the edited call %v and the note %v: %+v", shown, noted, final.Status.History)
	}
	logs := must(t, "alice", "", "approve", "logs", "pay", "-n", ns)
	if !strings.Contains(logs, "call c1: asked by rule charges: approved by alice; arguments edited by alice") {
		t.Errorf("logs do not say who edited c1:\n%s", logs)
	}

	// editable: false.
	strict := "    - {name: charges, tools: [charge], action: Ask, editable: false}\n"
	must(t, "", chargeAgent(ns, "strict", srv.URL, strict, chargeCall("c1", 5))+"---\n"+runYAML(ns, "strict-pay", "strict"), "apply", "-f", "-")
	waitPaused(t, ns, "strict-pay")
	wantStderr(t, mustFail(t, "alice", "approve", "strict-pay", "-n", ns, "--set", "amount=4"),
		"spec.arguments", "rule charges forbids editing the calls it asks about (editable: false)")
	must(t, "alice", "", "approve", "cancel", "strict-pay", "-n", ns)
}

// TestQuorum: two votes, one of them from group security (frank is in
// sre, erin and grace in security). One vote leaves the approval pending
// and show says what is missing; the same person twice is refused; the
// second group's vote approves and the effect runs once; a Deny ends it;
// two votes created at the same instant both count; someone outside
// policy.approvers is refused.
func TestQuorum(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-quorum")
	bindApprovers(t, ns)
	for _, g := range []string{"security", "sre"} {
		must(t, "", "", "create", "rolebinding", g+"-approves", "-n", ns, "--clusterrole=exagent-approver", "--group="+g)
	}
	srv := newEffectServer(t, false)
	rules := "    - name: two-person\n      tools: [charge]\n      action: Ask\n" +
		"      quorum: {approvals: 2, groups: [{group: sre, count: 1}, {group: security, count: 1}]}\n"
	agent := chargeAgent(ns, "payments", srv.URL, rules, chargeCall("c1", 5))
	agent = strings.Replace(agent, "    default: Deny\n", "    default: Deny\n    approvers: {groups: [sre, security]}\n", 1)
	must(t, "", agent+"---\n"+runYAML(ns, "pay", "payments")+"---\n"+runYAML(ns, "denied", "payments")+"---\n"+
		runYAML(ns, "together", "payments")+"---\n"+runYAML(ns, "edited", "payments")+"---\n"+
		runYAML(ns, "late-edit", "payments"), "apply", "-f", "-")

	waitPaused(t, ns, "pay")
	wantStderr(t, mustFail(t, "alice", "approve", "pay", "-n", ns), `user "alice" is not in policy.approvers of agent "payments"`)
	out := must(t, "frank", "", "approve", "pay", "-n", ns)
	if !strings.Contains(out, "frank's vote on approval") || !strings.Contains(out, "needs 1 more approval and 1 more from group security") {
		t.Errorf("frank's vote printed %q", out)
	}
	show := must(t, "erin", "", "approve", "show", "pay", "-n", ns)
	for _, want := range []string{"Quorum:         2 approvals, 1 from group sre, 1 from group security", "Votes:          frank (sre",
		"Still:          needs 1 more approval and 1 more from group security"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	list := must(t, "erin", "", "approve", "list", "-n", ns)
	if !strings.Contains(list, "VOTES") || !strings.Contains(list, "1 (frank); needs 1 more approval and 1 more from group security") {
		t.Errorf("list:\n%s", list)
	}
	wantStderr(t, mustFail(t, "frank", "approve", "pay", "-n", ns), "frank already voted on approval", "another person must approve")
	if p := getRun(t, ns, "pay").Status.Phase; p != exagentv1.PhaseAwaitingApproval || len(srv.requests()) != 0 {
		t.Fatalf("after one vote the run is %s and the tool was called %d times", p, len(srv.requests()))
	}
	must(t, "erin", "", "approve", "pay", "-n", ns, "--reason", "second pair of eyes")
	final := waitDone(t, ns, "pay")
	if final.Status.Phase != exagentv1.PhaseSucceeded || len(srv.requests()) != 1 {
		t.Fatalf("after the second vote: %s, %d tool requests, want Succeeded and exactly one", final.Status.Phase, len(srv.requests()))
	}
	if a := final.Status.Approvals[0]; len(a.Votes) != 2 || len(final.Status.Receipts) != 2 {
		t.Errorf("votes %+v receipts %d, want two votes with a receipt each", a.Votes, len(final.Status.Receipts))
	}

	// A Deny ends it at once.
	waitPaused(t, ns, "denied")
	must(t, "frank", "", "approve", "denied", "-n", ns)
	must(t, "grace", "", "approve", "deny", "denied", "-n", ns, "--reason", "not this one")
	if got := waitDone(t, ns, "denied"); got.Status.Phase != exagentv1.PhaseDenied {
		t.Errorf("a deny after one vote: %s", got.Status.Phase)
	}

	// Two votes at the same instant: both count (the controller's CAS
	// retries the loser on a fresh read).
	waitPaused(t, ns, "together")
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, who := range []string{"frank", "erin"} {
		wg.Go(func() { results[i] = kubectl(t, who, "", "approve", "together", "-n", ns, "--reason", "together") })
	}
	wg.Wait()
	for i, r := range results {
		if r.Err != nil {
			t.Errorf("vote %d: %v\n%s", i, r.Err, r.Stderr)
		}
	}
	if got := waitDone(t, ns, "together"); got.Status.Phase != exagentv1.PhaseSucceeded || len(got.Status.Approvals[0].Votes) != 2 {
		t.Errorf("concurrent votes: %s with %d votes, want Succeeded with both", got.Status.Phase, len(got.Status.Approvals[0].Votes))
	}

	// An edit under a quorum: every later vote is on the edited version. A
	// decision that still carries the model's payload hash is refused; the
	// plugin sends the edited one, and the effect runs with the edit.
	model := waitPaused(t, ns, "edited").Status.Approvals[0]
	must(t, "frank", "", "approve", "edited", "-n", ns, "--set", "amount=3")
	stale := fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: ApprovalDecision
metadata: {name: stale-vote, namespace: %s}
spec: {runRef: {name: edited}, approvalID: %s, decision: Approve, revision: %d, payloadHash: %q}
`, ns, model.ID, model.Revision, model.PayloadHash)
	r := kubectl(t, "erin", stale, "create", "-f", "-")
	if r.Err == nil {
		t.Fatal("a vote on the model's version of an edited call was stored")
	}
	wantStderr(t, r.Stderr, "spec.payloadHash", "the call was edited by frank", "a vote on the model's version does not count")
	wantStderr(t, mustFail(t, "erin", "approve", "edited", "-n", ns, "--set", "amount=4"),
		"spec.arguments", "already edited by frank", "every vote must be on that version")
	show = must(t, "erin", "", "approve", "show", "edited", "-n", ns)
	if !strings.Contains(show, "Arguments (edited by frank; every vote is on this version):") {
		t.Errorf("show does not present the edited version:\n%s", show)
	}
	before := len(srv.requests())
	must(t, "erin", "", "approve", "edited", "-n", ns)
	if got := waitDone(t, ns, "edited"); got.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("edited run: %s", got.Status.Phase)
	}
	if got := srv.received(); len(got) != before+1 || !strings.Contains(got[len(got)-1], `"amount":3`) {
		t.Errorf("the edited call under a quorum reached the tool as %q", got[before:])
	}

	// An edit as the last vote is refused: frank's vote is on the call as
	// the model proposed it and cannot count for arguments only erin saw.
	waitPaused(t, ns, "late-edit")
	must(t, "frank", "", "approve", "late-edit", "-n", ns)
	wantStderr(t, mustFail(t, "erin", "approve", "late-edit", "-n", ns, "--set", "amount=4"),
		"spec.arguments", "already has 1 vote on the call as proposed", "frank", "only the first vote may edit")
	if p := getRun(t, ns, "late-edit").Status.Phase; p != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("after a refused late edit the run is %s", p)
	}
	before = len(srv.requests())
	must(t, "erin", "", "approve", "late-edit", "-n", ns)
	if got := waitDone(t, ns, "late-edit"); got.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("late-edit run: %s", got.Status.Phase)
	}
	if got := srv.received(); len(got) != before+1 || !strings.Contains(got[len(got)-1], `"amount":5`) {
		t.Errorf("the call both voters saw reached the tool as %q", got[before:])
	}
}

// TestApproveForRun: one --for-run lets later calls of the tool run
// without asking, each naming the decision; a schema change in between
// asks again; sticky: false refuses --for-run.
func TestApproveForRun(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-forrun")
	bindApprovers(t, ns)
	srv := newEffectServer(t, false)
	rules := "    - {name: charges, tools: [charge], action: Ask}\n    - {name: notices, tools: [notify], action: Ask}\n"
	must(t, "", chargeAgent(ns, "payments", srv.URL, rules,
		chargeCall("c1", 1),
		chargeCall("c2", 2)+chargeCall("c3", 3)+"      - {id: n1, name: notify, arguments: {text: hi}}\n",
		chargeCall("c4", 4),
	)+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")

	waitPaused(t, ns, "pay")
	out := must(t, "alice", "", "approve", "pay", "-n", ns, "--for-run")
	if !strings.Contains(out, "approval c1-r1 approved for the rest of the run by alice") {
		t.Errorf("approve --for-run printed %q", out)
	}
	paused := waitPaused(t, ns, "pay") // notify n1 asks; c2 and c3 ran under the grant
	if len(paused.Status.Grants) != 1 {
		t.Fatalf("grants %+v, want one", paused.Status.Grants)
	}
	grant := paused.Status.Grants[0].Decision
	for _, id := range []string{"c2", "c3"} {
		c := paused.Status.Call(id)
		if c == nil || c.State != exagentv1.CallSucceeded || c.Grant != grant {
			t.Errorf("call %s = %+v, want Succeeded under grant %s", id, c, grant)
		}
	}
	if p := paused.Status.Pending(); len(p) != 1 || p[0].CallID != "n1" {
		t.Fatalf("pending %+v, want only n1", p)
	}
	show := must(t, "alice", "", "approve", "show", "pay", "-n", ns)
	if !strings.Contains(show, "c2:             charge Succeeded: asked by rule charges: approved for the run by alice (decision "+grant+")") {
		t.Errorf("show does not say c2 ran under the grant:\n%s", show)
	}

	// The schema of charge changes while the run waits: the grant no
	// longer covers charge, and c4 asks again.
	patch := `[{"op":"add","path":"/spec/tools/0/parameters/properties/memo","value":{"type":"string"}}]`
	must(t, "", "", "patch", "agent", "payments", "-n", ns, "--type=json", "-p", patch)
	must(t, "alice", "", "approve", "pay", "-n", ns)
	again := waitPaused(t, ns, "pay")
	if p := again.Status.Pending(); len(p) != 1 || p[0].CallID != "c4" {
		t.Fatalf("after the schema change: pending %+v, want c4 asked again", p)
	}
	must(t, "alice", "", "approve", "pay", "-n", ns)
	if got := waitDone(t, ns, "pay"); got.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s", got.Status.Phase)
	}
	var decisions struct{ Items []json.RawMessage }
	if err := json.Unmarshal([]byte(must(t, "", "", "get", "approvaldecisions", "-n", ns, "-o", "json")), &decisions); err != nil {
		t.Fatal(err)
	}
	if n := len(decisions.Items); n != 3 {
		t.Errorf("%d decisions for 4 charges and 1 notify, want 3 (c1 for the run, n1, c4)", n)
	}
	if n := len(srv.requests()); n != 5 {
		t.Errorf("%d tool requests, want 5", n)
	}

	// sticky: false.
	strict := "    - {name: charges, tools: [charge], action: Ask, sticky: false}\n"
	must(t, "", chargeAgent(ns, "strict", srv.URL, strict, chargeCall("c1", 1))+"---\n"+runYAML(ns, "strict-pay", "strict"), "apply", "-f", "-")
	waitPaused(t, ns, "strict-pay")
	wantStderr(t, mustFail(t, "alice", "approve", "strict-pay", "-n", ns, "--for-run"),
		"spec.scope", "rule charges forbids approving tool charge for the rest of the run (sticky: false)")
	must(t, "alice", "", "approve", "cancel", "strict-pay", "-n", ns)
}
