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

package app

import (
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestEditedArguments: --set edits the version the approval stands for,
// --args-file replaces it (JSON or YAML), values are JSON when they parse.
func TestEditedArguments(t *testing.T) {
	run := makeRun("pay", "demo").Phase(exagentv1.PhaseAwaitingApproval).
		Call(call("c1", "pay", `{"amount":42,"to":{"name":"bob"}}`, exagentv1.CallPending)).Obj()
	model := exagentv1.Approval{ID: "a1", CallID: "c1"}
	edited := exagentv1.Approval{ID: "a1", CallID: "c1", Edit: &exagentv1.ApprovalEdit{Args: `{"amount":7}`}}
	for name, tc := range map[string]struct {
		a        exagentv1.Approval
		req      decisionRequest
		want     string
		wantFail string
	}{
		"set a number":           {a: model, req: decisionRequest{Sets: []string{"amount=40"}}, want: `{"amount":40,"to":{"name":"bob"}}`},
		"set a nested string":    {a: model, req: decisionRequest{Sets: []string{"to.name=carol"}}, want: `{"amount":42,"to":{"name":"carol"}}`},
		"set a new object":       {a: model, req: decisionRequest{Sets: []string{"memo.text=hi there"}}, want: `{"amount":42,"memo":{"text":"hi there"},"to":{"name":"bob"}}`},
		"set JSON":               {a: model, req: decisionRequest{Sets: []string{`tags=["a","b"]`, "urgent=true"}}, want: `{"amount":42,"tags":["a","b"],"to":{"name":"bob"},"urgent":true}`},
		"big integers stay":      {a: model, req: decisionRequest{Sets: []string{"amount=12345678901234567890"}}, want: `{"amount":12345678901234567890,"to":{"name":"bob"}}`},
		"edits the edited":       {a: edited, req: decisionRequest{Sets: []string{"to=x"}}, want: `{"amount":7,"to":"x"}`},
		"a YAML file":            {a: model, req: decisionRequest{ArgsFile: []byte("amount: 3\nto: dave\n")}, want: `{"amount":3,"to":"dave"}`},
		"a file then a set":      {a: model, req: decisionRequest{ArgsFile: []byte(`{"amount":3}`), Sets: []string{"amount=4"}}, want: `{"amount":4}`},
		"no key":                 {a: model, req: decisionRequest{Sets: []string{"=3"}}, wantFail: "want key=value"},
		"into a non-object":      {a: model, req: decisionRequest{Sets: []string{"amount.x=1"}}, wantFail: "amount is not an object"},
		"a file that is a list":  {a: model, req: decisionRequest{ArgsFile: []byte("- 1\n- 2\n")}, wantFail: "--args-file"},
		"a file that is no JSON": {a: model, req: decisionRequest{ArgsFile: []byte("{")}, wantFail: "--args-file"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := editedArguments(run, &tc.a, tc.req)
			if tc.wantFail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantFail) {
					t.Fatalf("err = %v, want %q", err, tc.wantFail)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestShowQuorumAndEdit: show prints the quorum, its votes and what is
// missing, the edited version beside the model's, and list's VOTES column.
func TestShowQuorumAndEdit(t *testing.T) {
	run := makeRun("pay", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
		Call(call("c1", "pay", `{"amount":42}`, exagentv1.CallPending)).Obj()
	run.Status.Calls[0].Rule = "two-person"
	run.Status.Approvals = []exagentv1.Approval{{ID: "a1", CallID: "c1", State: exagentv1.ApprovalPending, Rule: "two-person", Revision: 1,
		PayloadHash: "sha256:model", Quorum: &exagentv1.Quorum{Approvals: 2, Groups: []exagentv1.GroupQuorum{{Group: "security", Count: 1}}},
		Votes: []exagentv1.Vote{{Actor: exagentv1.Actor{Username: "alice", Groups: []string{"sre"}}, OperationID: "op1"}},
		Edit:  &exagentv1.ApprovalEdit{Args: `{"amount":40}`, PayloadHash: "sha256:edited", Editor: exagentv1.Actor{Username: "alice"}}}}
	var out strings.Builder
	if err := renderShow(&out, showView{Run: run, Agent: &exagentv1.Agent{}, Now: t0, Tail: 0}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Arguments (edited by alice; every vote is on this version):",
		`"amount": 40`,
		"The model's arguments:",
		"Payload hash:   sha256:edited",
		"Quorum:         2 approvals, 1 from group security",
		"Votes:          alice (sre)",
		"Still:          needs 1 more approval and 1 more from group security",
		"c1:             pay Pending: asked by rule two-person: waiting for a decision (1 vote so far; needs 1 more approval and 1 more from group security)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("show lacks %q:\n%s", want, got)
		}
	}
	var b strings.Builder
	if err := printApprovalTable(&b, pendingApprovals([]exagentv1.AgentRun{*run}), t0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "VOTES") || !strings.Contains(b.String(), "1 (alice); needs 1 more approval and 1 more from group security") ||
		!strings.Contains(b.String(), `{"amount":40}`) {
		t.Errorf("list:\n%s", b.String())
	}
}
