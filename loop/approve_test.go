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

const paySchema = `{"type":"object","properties":{"amount":{"type":"integer","maximum":1000},"to":{"type":"string"}},"required":["amount"]}`

// editEnv: pay asks (rule pay-asks), with a schema; amounts over 500 are denied.
func editEnv(t testing.TB, edit func(*exagentv1.PolicyRule)) *Env {
	a := MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Schema("pay", paySchema).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").
		Rule("big-pay", exagentv1.PolicyDeny, "args.amount > 500", "pay").
		Rule("pay-asks", exagentv1.PolicyAsk, "", "pay")
	if edit != nil {
		a.EditRule("pay-asks", edit)
	}
	return mustEnv(t, a.Spec(), MakeRun().Spec())
}

// pausedOn pauses a run of env on one call of pay with args.
func pausedOn(t testing.TB, env *Env, args string) *harness {
	t.Helper()
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("p1", "pay", args)))
	h.step()
	if h.s.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("phase %s, want AwaitingApproval: %s", h.s.Phase, h.s.Message)
	}
	return h
}

func editCmd(t testing.TB, s Status, op, who, args string) DecisionCmd {
	d := approveCmd(t, s, "p1", op, who)
	d.Arguments = args
	return d
}

// TestEditThenApprove: an Approve with arguments is checked against the
// schema and the policy, and the call runs once with exactly the edited
// arguments; the call keeps the model's, and the model's next request
// shows the call as it ran with a note naming the editor.
func TestEditThenApprove(t *testing.T) {
	env := editEnv(t, nil)
	h := pausedOn(t, env, `{"amount":42,"to":"bob"}`)
	awaiting := h.s

	refusals := []struct {
		name, args, want string
	}{
		{"schema", `{"amount":"lots"}`, "do not match the parameters schema"},
		{"required", `{"to":"bob"}`, "do not match the parameters schema"},
		{"policy denies the edit", `{"amount":900}`, "the policy denies the edited call (rule big-pay)"},
		{"not an object", `[1,2]`, "must be a JSON object"},
		{"not JSON", `{"amount":`, "not JSON"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Approve(awaiting, env, editCmd(t, awaiting, "op-"+tc.name, "alice", tc.args), t0)
			if !IsKind(err, KindConflict) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("edit %s: %v, want a conflict saying %q", tc.args, err, tc.want)
			}
		})
	}

	model := h.s.Calls[0]
	h.decide(editCmd(t, awaiting, "op-edit", "alice", `{"to":"bob", "amount": 40}`))
	c := h.s.Calls[0]
	if c.State != exagentv1.CallApproved || c.Args != `{"amount":40,"to":"bob"}` {
		t.Fatalf("call %s args %s, want Approved with the edited arguments", c.State, c.Args)
	}
	if c.Edit == nil || c.Edit.ModelArgs != model.Args || c.Edit.ModelPayloadHash != model.PayloadHash || c.Edit.Editor.Username != "alice" {
		t.Fatalf("edit record %+v does not keep the model's call and its editor", c.Edit)
	}
	if c.PayloadHash == model.PayloadHash || c.ArgsHash == model.ArgsHash {
		t.Error("the edited call kept the model's hashes")
	}
	if r := h.s.Receipts[0]; r.ArgsHash != c.ArgsHash {
		t.Errorf("receipt argsHash %q, want the edited arguments' %q", r.ArgsHash, c.ArgsHash)
	}
	// The same operation again is a replay; with other arguments, a conflict.
	if _, r, err := Approve(h.s, env, editCmd(t, awaiting, "op-edit", "alice", `{"amount":40,"to":"bob"}`), t0); err != nil || r.OperationID != "op-edit" {
		t.Errorf("replay: %+v %v", r, err)
	}
	if _, _, err := Approve(h.s, env, editCmd(t, awaiting, "op-edit", "alice", `{"amount":41,"to":"bob"}`), t0); !IsKind(err, KindConflict) {
		t.Errorf("same operation, other edit: %v, want a conflict", err)
	}

	h.claim("worker-2")
	act := h.step()
	if act.Kind != ActRunTools || len(act.Calls) != 1 || string(act.Calls[0].Args) != `{"amount":40,"to":"bob"}` {
		t.Fatalf("after the edit: %s %+v, want the edited call run once", describe(act), act.Calls)
	}
	h.outcome("p1", ResultSucceeded, "paid")
	act = h.step()
	if act.Kind != ActCallModel {
		t.Fatalf("after the outcome: %s", describe(act))
	}
	var shown, noted bool
	for _, m := range act.Model.Messages {
		for _, tc := range m.ToolCalls {
			shown = shown || (tc.ID == "p1" && tc.Arguments == `{"amount":40,"to":"bob"}`)
		}
		noted = noted || (m.ToolCallID == "p1" && strings.Contains(m.Content, "alice edited the arguments") && strings.HasSuffix(m.Content, "paid"))
	}
	if !shown || !noted {
		t.Errorf("the model's request shows the edited call %v and the note %v: %+v", shown, noted, act.Model.Messages)
	}
}

// TestEditForbidden: editable: false, and builtin tools by default.
func TestEditForbidden(t *testing.T) {
	env := editEnv(t, func(r *exagentv1.PolicyRule) { r.Editable = new(false) })
	h := pausedOn(t, env, `{"amount":42}`)
	_, _, err := Approve(h.s, env, editCmd(t, h.s, "op", "alice", `{"amount":1}`), t0)
	if !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "rule pay-asks forbids editing") {
		t.Errorf("editable false: %v", err)
	}
	// The model's own arguments are no edit.
	if _, _, err := Approve(h.s, env, editCmd(t, h.s, "op2", "alice", `{ "amount" : 42 }`), t0); err != nil {
		t.Errorf("approving the model's own arguments under editable false: %v", err)
	}

	builtin := mustEnv(t, MakeAgent().Tool(exagentv1.ToolSpec{Name: "scale",
		Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinGet, Kinds: []string{"ConfigMap"}}}).Spec(), MakeRun().Spec())
	hb := newHarness(t, builtin).claim(w1)
	hb.step()
	hb.respond(tools(call("p1", "scale", `{"name":"a"}`)))
	hb.step()
	_, _, err = Approve(hb.s, builtin, editCmd(t, hb.s, "op", "alice", `{"name":"b"}`), t0)
	if !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "builtin tool \"scale\" are not editable") {
		t.Errorf("builtin: %v", err)
	}
}

func member(name string, groups ...string) exagentv1.Actor {
	return exagentv1.Actor{Username: name, Groups: groups}
}

// TestQuorum: two votes, one of them from group security; the same person
// twice is refused; a Deny ends it at once; votes on another version of
// an edited call do not count.
func TestQuorum(t *testing.T) {
	env := editEnv(t, func(r *exagentv1.PolicyRule) {
		r.Quorum = &exagentv1.Quorum{Approvals: 2, Groups: []exagentv1.GroupQuorum{{Group: "security", Count: 1}}}
	})
	h := pausedOn(t, env, `{"amount":42}`)
	awaiting := h.s
	if q := awaiting.Approvals[0].Quorum; q == nil || q.Approvals != 2 {
		t.Fatalf("the approval does not carry the rule's quorum: %+v", q)
	}
	vote := func(s Status, op string, who exagentv1.Actor) DecisionCmd {
		d := approveCmd(t, s, "p1", op, who.Username)
		d.Actor = who
		return d
	}

	one, _, err := Approve(awaiting, env, vote(awaiting, "op-a", member("alice", "sre")), t0)
	if err != nil {
		t.Fatal(err)
	}
	a := one.Approvals[0]
	if one.Phase != exagentv1.PhaseAwaitingApproval || a.State != exagentv1.ApprovalPending || len(a.Votes) != 1 {
		t.Fatalf("after one vote: phase %s approval %s votes %d, want still pending", one.Phase, a.State, len(a.Votes))
	}
	if got := a.QuorumMissing(); got != "needs 1 more approval and 1 more from group security" {
		t.Errorf("missing = %q", got)
	}
	if len(one.Receipts) != 1 || one.Receipts[0].Actor.Username != "alice" {
		t.Errorf("the vote has no receipt of its own: %+v", one.Receipts)
	}
	if _, _, err := Approve(one, env, vote(one, "op-a2", member("alice", "sre")), t0); !IsKind(err, KindConflict) ||
		!strings.Contains(err.Error(), "alice already voted") {
		t.Errorf("a second vote by alice: %v", err)
	}
	if _, r, err := Approve(one, env, vote(awaiting, "op-a", member("alice", "sre")), t0); err != nil || r.OperationID != "op-a" {
		t.Errorf("alice's vote replayed: %+v %v, want its receipt", r, err)
	}
	// bob (not in security) makes two votes but not the group's.
	two, _, err := Approve(one, env, vote(one, "op-b", member("bob", "sre")), t0)
	if err != nil || two.Approvals[0].State != exagentv1.ApprovalPending {
		t.Fatalf("bob's vote: %v, approval %s", err, two.Approvals[0].State)
	}
	if got := two.Approvals[0].QuorumMissing(); got != "needs 1 more from group security" {
		t.Errorf("missing after two votes = %q", got)
	}
	done, _, err := Approve(two, env, vote(two, "op-c", member("carol", "security")), t0)
	if err != nil || done.Phase != exagentv1.PhaseApproved || done.Calls[0].State != exagentv1.CallApproved {
		t.Fatalf("carol's vote: %v, phase %s", err, done.Phase)
	}
	if !strings.Contains(done.Message, "alice, bob, carol") {
		t.Errorf("message %q does not name the voters", done.Message)
	}

	// Any eligible Deny ends it at once.
	deny := approveCmd(t, one, "p1", "op-d", "dave")
	deny.Decision = exagentv1.DecisionDeny
	denied, _, err := Deny(one, env, deny, t0)
	if err != nil || denied.Phase != exagentv1.PhaseDenied {
		t.Errorf("a deny after one vote: %v, phase %s", err, denied.Phase)
	}

	// Under a quorum an edit sets the version every later vote must be on.
	ed := vote(awaiting, "op-e", member("alice", "security"))
	ed.Arguments = `{"amount":10}`
	edited, _, err := Approve(awaiting, env, ed, t0)
	if err != nil || edited.Approvals[0].Edit == nil {
		t.Fatalf("an edit as the first vote: %v", err)
	}
	stale := vote(edited, "op-f", member("frank"))
	if _, _, err := Approve(edited, env, stale, t0); !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "was edited by alice") {
		t.Errorf("a vote on the model's version after an edit: %v", err)
	}
	other := vote(edited, "op-g", member("frank"))
	other.PayloadHash, other.Arguments = edited.Approvals[0].Edit.PayloadHash, `{"amount":11}`
	if _, _, err := Approve(edited, env, other, t0); !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "every vote must be on that version") {
		t.Errorf("a vote with other arguments: %v", err)
	}
	same := vote(edited, "op-h", member("frank"))
	same.PayloadHash = edited.Approvals[0].Edit.PayloadHash
	final, _, err := Approve(edited, env, same, t0)
	if err != nil || final.Phase != exagentv1.PhaseApproved || final.Calls[0].Args != `{"amount":10}` {
		t.Fatalf("the second vote on the edited version: %v, phase %s args %s", err, final.Phase, final.Calls[0].Args)
	}
}

// TestApproveForRun: one Approve with scope Run lets later calls of the
// tool through, each naming the decision; a schema change ends it; sticky
// false refuses it; under a quorum one person's Run does not make it stick.
func TestApproveForRun(t *testing.T) {
	env := editEnv(t, nil)
	h := pausedOn(t, env, `{"amount":1}`)
	d := approveCmd(t, h.s, "p1", "op-run", "alice")
	d.Scope = exagentv1.ScopeRun
	h.decide(d)
	if len(h.s.Grants) != 1 || h.s.Grants[0].Tool != "pay" || h.s.Grants[0].Decision != "op-run" || h.s.Receipts[0].Scope != exagentv1.ScopeRun {
		t.Fatalf("grants %+v receipts %+v", h.s.Grants, h.s.Receipts)
	}
	h.claim("worker-2")
	h.step()
	h.outcome("p1", ResultSucceeded, "ok")
	h.step()
	h.respond(tools(call("p2", "pay", `{"amount":2}`), call("p3", "pay", `{"amount":3}`), call("p4", "pay", `{"amount":900}`)))
	act := h.step()
	if act.Kind != ActRunTools || len(act.Calls) != 2 {
		t.Fatalf("later calls: %s, want p2 and p3 run without asking", describe(act))
	}
	for _, id := range []string{"p2", "p3"} {
		if c := h.s.Calls[findCall(&h.s, id)]; c.Grant != "op-run" || c.Policy != env.Binding().Policy {
			t.Errorf("%s grant %q policy %q, want the decision and the policy's fingerprint", id, c.Grant, c.Policy)
		}
	}
	if st := h.callState("p4"); st != exagentv1.CallRefused {
		t.Errorf("p4 (denied by policy) is %s: a grant never beats a Deny", st)
	}

	// The tool's schema changed: the grant no longer covers the calls.
	changed := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Schema("pay", `{"type":"object","properties":{"amount":{"type":"integer"}}}`).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").
		Rule("big-pay", exagentv1.PolicyDeny, "args.amount > 500", "pay").
		Rule("pay-asks", exagentv1.PolicyAsk, "", "pay").Spec(), MakeRun().Spec())
	h2 := newHarness(t, changed)
	h2.s = h.s
	h2.f = h.f
	h2.outcome("p2", ResultSucceeded, "ok").outcome("p3", ResultSucceeded, "ok")
	h2.step()
	h2.respond(tools(call("p5", "pay", `{"amount":5}`)))
	if act := h2.step(); act.Kind != ActPause {
		t.Errorf("after a schema change: %s, want the call asked about again", describe(act))
	}

	// sticky: false refuses scope Run.
	strict := editEnv(t, func(r *exagentv1.PolicyRule) { r.Sticky = new(false) })
	hs := pausedOn(t, strict, `{"amount":1}`)
	ds := approveCmd(t, hs.s, "p1", "op", "alice")
	ds.Scope = exagentv1.ScopeRun
	if _, _, err := Approve(hs.s, strict, ds, t0); !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "sticky: false") {
		t.Errorf("sticky false: %v", err)
	}

	// Quorum: alice's Run and bob's Call approve this call only.
	q := editEnv(t, func(r *exagentv1.PolicyRule) { r.Quorum = &exagentv1.Quorum{Approvals: 2} })
	hq := pausedOn(t, q, `{"amount":1}`)
	va := approveCmd(t, hq.s, "p1", "op-a", "alice")
	va.Scope = exagentv1.ScopeRun
	hq.decide(va)
	hq.decide(approveCmd(t, hq.s, "p1", "op-b", "bob"))
	if hq.s.Phase != exagentv1.PhaseApproved || len(hq.s.Grants) != 0 {
		t.Errorf("quorum with one Run vote: phase %s grants %+v, want approved for this call only", hq.s.Phase, hq.s.Grants)
	}
}

// TestExpirePerRule: a rule's onExpire overrides the policy's; a Deny at
// the instant of expiry stays a Deny, an Approve is refused.
func TestExpirePerRule(t *testing.T) {
	env := editEnv(t, func(r *exagentv1.PolicyRule) { r.OnExpire = exagentv1.OnExpireContinue })
	h := pausedOn(t, env, `{"amount":1}`)
	at := t0.Add(24 * time.Hour)
	got, changed, err := Expire(h.s, env, at)
	if err != nil || !changed || got.Phase != exagentv1.PhaseApproved || got.Calls[0].State != exagentv1.CallRefused {
		t.Errorf("rule onExpire Continue: %v changed %v phase %s call %s", err, changed, got.Phase, got.Calls[0].State)
	}

	stop := editEnv(t, nil)
	hs := pausedOn(t, stop, `{"amount":1}`)
	deny := approveCmd(t, hs.s, "p1", "op-d", "alice")
	deny.Decision = exagentv1.DecisionDeny
	denied, _, err := Deny(hs.s, stop, deny, at)
	if err != nil || denied.Phase != exagentv1.PhaseDenied {
		t.Errorf("a deny at the instant of expiry: %v phase %s, want Denied", err, denied.Phase)
	}
	if _, _, err := Approve(hs.s, stop, approveCmd(t, hs.s, "p1", "op-a", "alice"), at); !IsKind(err, KindExpired) {
		t.Errorf("an approve at the instant of expiry: %v, want Expired", err)
	}
}

// TestQuorumPolicyChecks: CompilePolicy names what is wrong with a quorum.
func TestQuorumPolicyChecks(t *testing.T) {
	for _, tc := range []struct {
		rule exagentv1.PolicyRule
		want string
	}{
		{exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAllow, Quorum: &exagentv1.Quorum{Approvals: 2}}, "only a rule with action Ask"},
		{exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, Quorum: &exagentv1.Quorum{}}, "set approvals or groups"},
		{exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, Quorum: &exagentv1.Quorum{Approvals: 17}}, "between 1 and 16"},
		{exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, Quorum: &exagentv1.Quorum{
			Groups: []exagentv1.GroupQuorum{{Group: "a", Count: 1}, {Group: "a", Count: 1}}}}, `"a" is listed twice`},
		{exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, OnExpire: "Later"}, `onExpire: "Later"`},
	} {
		_, err := CompilePolicy(exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{tc.rule}})
		if err == nil || !strings.Contains(err.Error(), "policy.rules[0].") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.rule, err, tc.want)
		}
	}
}
