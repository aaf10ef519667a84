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
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestPrintApprovalTable(t *testing.T) {
	long := `{"name":"web","namespace":"demo","replicas":3,"comment":"a long comment that does not fit"}`
	runs := []exagentv1.AgentRun{
		*makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(2).
			Call(call("call-0-0", "scale", long, exagentv1.CallPending)).
			Call(call("call-0-1", "scale", `{"name":"api"}`, exagentv1.CallPending)).
			Approval(approval("call-0-1", "call-0-1", 2, exagentv1.ApprovalPending, time.Minute, 0)).
			Approval(approval("call-0-0", "call-0-0", 2, exagentv1.ApprovalPending, 2*time.Minute, 24*time.Hour)).Obj(),
		*makeRun("done", "demo").Phase(exagentv1.PhaseSucceeded).
			Call(call("call-0-0", "scale", `{}`, exagentv1.CallSucceeded)).
			Approval(approval("call-0-0", "call-0-0", 0, exagentv1.ApprovalApproved, time.Hour, time.Hour)).Obj(),
		*makeRun("other", "a-team").Phase(exagentv1.PhaseAwaitingApproval).
			Call(call("c1", "restart", `{"name":"db"}`, exagentv1.CallPending)).
			Approval(approval("c1", "c1", 0, exagentv1.ApprovalPending, 3*time.Hour, -time.Minute)).Obj(),
	}
	tests := map[string]struct {
		wide bool
		want string
	}{
		"default": {want: `
NAMESPACE   RUN         APPROVAL   TOOL      ARGS                                       REQUESTED   EXPIRES
a-team      other       c1         restart   {"name":"db"}                              3h          expired
demo        scale-web   call-0-0   scale     {"name":"web","namespace":"demo","repli…   2m          in 24h
demo        scale-web   call-0-1   scale     {"name":"api"}                             60s         never
`},
		"wide": {wide: true, want: `
NAMESPACE   RUN         APPROVAL   TOOL      ARGS                                                                               REQUESTED   EXPIRES   AGENT   CALL       RULE                 REVISION   PAYLOAD
a-team      other       c1         restart   {"name":"db"}                                                                      3h          expired   ops     c1         ask-before-scaling   0          sha256:c10123456789
demo        scale-web   call-0-0   scale     {"name":"web","namespace":"demo","replicas":3,"comment":"a long comment that do…   2m          in 24h    ops     call-0-0   ask-before-scaling   2          sha256:call-0-00123
demo        scale-web   call-0-1   scale     {"name":"api"}                                                                     60s         never     ops     call-0-1   ask-before-scaling   2          sha256:call-0-10123
`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printApprovalTable(&b, pendingApprovals(runs), t0, tc.wide); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimPrefix(tc.want, "\n"), b.String()); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListOutput(t *testing.T) {
	runs := []exagentv1.AgentRun{
		*makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
			Call(call("call-0-0", "scale", `{"name":"web","replicas":3}`, exagentv1.CallPending)).
			Approval(approval("call-0-0", "call-0-0", 1, exagentv1.ApprovalPending, time.Minute, time.Hour)).Obj(),
	}
	tests := map[string]struct {
		output     string
		rows       []pendingApproval
		namespace  string
		wantOut    string
		wantErrOut string
	}{
		"json": {output: "json", rows: pendingApprovals(runs), wantOut: `{
    "items": [
        {
            "namespace": "demo",
            "run": "scale-web",
            "agent": "ops",
            "approval": "call-0-0",
            "callID": "call-0-0",
            "tool": "scale",
            "args": {
                "name": "web",
                "replicas": 3
            },
            "payloadHash": "sha256:call-0-00123456789abcdef",
            "revision": 1,
            "rule": "ask-before-scaling",
            "requestedAt": "2026-03-01T11:59:00Z",
            "expiresAt": "2026-03-01T13:00:00Z"
        }
    ]
}
`},
		"yaml": {output: "yaml", rows: pendingApprovals(runs), wantOut: `items:
- agent: ops
  approval: call-0-0
  args:
    name: web
    replicas: 3
  callID: call-0-0
  expiresAt: "2026-03-01T13:00:00Z"
  namespace: demo
  payloadHash: sha256:call-0-00123456789abcdef
  requestedAt: "2026-03-01T11:59:00Z"
  revision: 1
  rule: ask-before-scaling
  run: scale-web
  tool: scale
`},
		"empty json is an empty list": {output: "json", wantOut: "{\n    \"items\": []\n}\n"},
		"empty table in a namespace":  {namespace: "demo", wantErrOut: "No pending approvals in demo namespace.\n"},
		"empty table everywhere":      {wantErrOut: "No pending approvals found.\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := &listOptions{Output: tc.output, namespace: tc.namespace}
			o.Out, o.ErrOut = &out, &errOut
			if err := o.print(tc.rows); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantOut, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrOut, errOut.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCellFormatting(t *testing.T) {
	in := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	tests := map[string]struct {
		got, want string
	}{
		"expires never":       {got: expires(nil, t0), want: "never"},
		"expires in future":   {got: expires(in(90*time.Minute), t0), want: "in 90m"},
		"expires now":         {got: expires(in(0), t0), want: "expired"},
		"age":                 {got: age(t0.Add(-3*24*time.Hour), t0), want: "3d"},
		"age unknown":         {got: age(time.Time{}, t0), want: "<unknown>"},
		"truncate short":      {got: truncate("abc", 5), want: "abc"},
		"truncate runes":      {got: truncate("ééééééé", 4), want: "ééé…"},
		"compact":             {got: compactJSON([]byte("{ \"a\" : 1 }")), want: `{"a":1}`},
		"compact not json":    {got: compactJSON([]byte("plain")), want: "plain"},
		"compact empty":       {got: compactJSON(nil), want: "{}"},
		"short hash":          {got: shortHash("sha256:0123456789abcdef0123"), want: "sha256:0123456789ab"},
		"short hash no algo":  {got: shortHash("0123456789abcdef"), want: "0123456789a…"},
		"pretty":              {got: prettyJSON(`{"a":1}`, "  "), want: "  {\n    \"a\": 1\n  }"},
		"pretty not json":     {got: prettyJSON(`nope`, "  "), want: "  nope"},
		"generateName":        {got: generateName("scale-web", exagentv1.DecisionApprove), want: "scale-web-approve-"},
		"generateName capped": {got: generateName(strings.Repeat("a", 253), exagentv1.DecisionResolve), want: strings.Repeat("a", 248-len("-resolve-")) + "-resolve-"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
