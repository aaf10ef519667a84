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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestRenderShow(t *testing.T) {
	yes, no := true, false
	const (
		rbac = `  RBAC:           verb "approve" on agents/approval "ops" in namespace "demo" (ClusterRole exagent-approver; resolve: exagent-resolver)
`
		never = `  Never:          system:serviceaccount:demo:default (the run's own ServiceAccount) and the exagent manager's identity
`
	)
	paused := makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
		Call(call("call-0-0", "scale", `{"name":"web","replicas":3}`, exagentv1.CallPending)).
		Approval(approval("call-0-0", "call-0-0", 1, exagentv1.ApprovalPending, 2*time.Minute, 24*time.Hour)).
		History(
			exagentv1.Message{Role: exagentv1.RoleSystem, Content: "You operate\nthe demo namespace."},
			exagentv1.Message{Role: exagentv1.RoleUser, Content: "Scale web to 3."},
			exagentv1.Message{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "call-0-0", Name: "scale", Arguments: `{"name":"web","replicas":3}`}}},
		).Obj()
	paused.Spec.RequestedBy = &exagentv1.Actor{Username: "carol"}
	agent := &exagentv1.Agent{Spec: exagentv1.AgentSpec{Policy: exagentv1.PolicySpec{
		Approvers:          &exagentv1.Approvers{Users: []string{"alice"}, Groups: []string{"sre"}},
		ForbidSelfApproval: true,
	}}}

	tests := map[string]struct {
		view showView
		want string
	}{
		"pending approval, approvers, you may, last two messages": {
			view: showView{Run: paused, Agent: agent, YouMay: &yes, Now: t0, Tail: 2},
			want: `
Run:              demo/scale-web
Agent:            ops
Phase:            AwaitingApproval (step 0, revision 1)
Requested by:     carol

Approval call-0-0 (Pending):
  Tool:           scale (call call-0-0, step 0)
  Arguments:
    {
      "name": "web",
      "replicas": 3
    }
  Payload hash:   sha256:call-0-00123456789abcdef
  Revision:       1
  Policy rule:    ask-before-scaling
  Requested:      2026-03-01T11:58:00Z (2m ago)
  Expires:        2026-03-02T12:00:00Z (in 24h)
  Approve:        kubectl approve scale-web call-0-0 --expect-hash sha256:call-0-00123456789abcdef
  Deny:           kubectl approve deny scale-web call-0-0 --expect-hash sha256:call-0-00123456789abcdef
  Or:             edit it (kubectl approve scale-web call-0-0 --set key=value), or approve the tool for the run (--for-run)

Calls of step 0 (what the policy and people decided; kubectl approve logs scale-web shows every step's):
  call-0-0:       scale Pending: asked by rule ask-before-scaling: waiting for a decision

Who may decide:
  RBAC:           verb "approve" on agents/approval "ops" in namespace "demo" (ClusterRole exagent-approver; resolve: exagent-resolver)
  Never:          system:serviceaccount:demo:default (the run's own ServiceAccount) and the exagent manager's identity
  Approvers:      users alice; groups sre
  Self-approval:  forbidden (carol may not decide)
  You:            RBAC allows you to approve

Transcript (last 2 of 3 messages):
  [user]       Scale web to 3.
  [assistant]  → scale {"name":"web","replicas":3} (call call-0-0)
`,
		},
		"agent unreadable, you may not, no transcript": {
			view: showView{Run: paused, AgentNote: "not readable: Error from server (Forbidden): nope", YouMay: &no, Now: t0, Tail: 0},
			want: `
Run:              demo/scale-web
Agent:            ops
Phase:            AwaitingApproval (step 0, revision 1)
Requested by:     carol

Approval call-0-0 (Pending):
  Tool:           scale (call call-0-0, step 0)
  Arguments:
    {
      "name": "web",
      "replicas": 3
    }
  Payload hash:   sha256:call-0-00123456789abcdef
  Revision:       1
  Policy rule:    ask-before-scaling
  Requested:      2026-03-01T11:58:00Z (2m ago)
  Expires:        2026-03-02T12:00:00Z (in 24h)
  Approve:        kubectl approve scale-web call-0-0 --expect-hash sha256:call-0-00123456789abcdef
  Deny:           kubectl approve deny scale-web call-0-0 --expect-hash sha256:call-0-00123456789abcdef
  Or:             edit it (kubectl approve scale-web call-0-0 --set key=value), or approve the tool for the run (--for-run)

Calls of step 0 (what the policy and people decided; kubectl approve logs scale-web shows every step's):
  call-0-0:       scale Pending: asked by rule ask-before-scaling: waiting for a decision

Who may decide:
  RBAC:           verb "approve" on agents/approval "ops" in namespace "demo" (ClusterRole exagent-approver; resolve: exagent-resolver)
  Never:          system:serviceaccount:demo:default (the run's own ServiceAccount) and the exagent manager's identity
  Approvers:      <unknown: agent not readable: Error from server (Forbidden): nope>
  You:            RBAC does not allow you to approve (missing verb "approve" on agents/approval)
`,
		},
		"nothing pending, an uncertain call": {
			view: showView{
				Run: makeRun("charge", "demo").Phase(exagentv1.PhaseUncertain).Revision(2).
					Call(call("c1", "charge", `{"amount":5}`, exagentv1.CallUncertain)).Obj(),
				Agent: &exagentv1.Agent{}, YouMay: &yes, YouVerb: "resolve", Now: t0, Tail: -1,
			},
			want: `
Run:              demo/charge
Agent:            ops
Phase:            Uncertain (step 0, revision 2)

No pending approvals.

Uncertain calls (need kubectl approve resolve):
  c1:             charge {"amount":5}

Who may decide:
  RBAC:           verb "approve" on agents/approval "ops" in namespace "demo" (ClusterRole exagent-approver; resolve: exagent-resolver)
  Never:          system:serviceaccount:demo:default (the run's own ServiceAccount) and the exagent manager's identity
  Approvers:      anyone RBAC allows (the Agent's policy names no approvers)
  You:            RBAC allows you to resolve

Transcript (0 messages):
  <empty>
`,
		},
		"a cancelled run's uncertain call, to record": {
			view: showView{
				Run: makeRun("charge", "demo").Phase(exagentv1.PhaseCancelled).Revision(2).
					Call(call("c1", "charge", `{"amount":5}`, exagentv1.CallUncertain)).Obj(),
				Agent: &exagentv1.Agent{}, YouMay: &yes, YouVerb: "resolve", Now: t0, Tail: 0,
			},
			want: `
Run:              demo/charge
Agent:            ops
Phase:            Cancelled (step 0, revision 2)

No pending approvals.

Uncertain calls (the run is cancelled: nothing runs again; record what happened with kubectl approve resolve):
  c1:             charge {"amount":5}

Who may decide:
` + rbac + never + `  Approvers:      anyone RBAC allows (the Agent's policy names no approvers)
  You:            RBAC allows you to resolve
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := renderShow(&b, tc.view); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimPrefix(tc.want, "\n"), b.String()); diff != "" {
				t.Errorf("show (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderShowMCP: an mcp call shows its server and the tool's
// annotations (the server's hints) next to the arguments.
func TestRenderShowMCP(t *testing.T) {
	run := makeRun("triage", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
		Call(call("c1", "gh_close_issue", `{"issue":7}`, exagentv1.CallPending)).
		Approval(approval("c1", "c1", 1, exagentv1.ApprovalPending, time.Minute, time.Hour)).Obj()
	run.Status.Calls[0].MCP = &exagentv1.CallMCP{Server: "https://mcp.example/mcp", Tool: "close_issue", Title: "Close issue",
		DestructiveHint: true, OpenWorldHint: true}
	var buf bytes.Buffer
	if err := renderShow(&buf, showView{Run: run, Now: t0}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  MCP server:     https://mcp.example/mcp (tool close_issue)\n",
		`  Annotations:    title "Close issue", readOnlyHint=false destructiveHint=true idempotentHint=false openWorldHint=true (the server's own hints, unverified)` + "\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("show output lacks %q:\n%s", want, buf.String())
		}
	}
}

// A Waiting run shows each waiting call: what, since and until when.
func TestRenderShowWaiting(t *testing.T) {
	run := makeRun("rollout", "demo").Phase(exagentv1.PhaseWaiting).
		Call(call("c1", "wait_ready", `{"kind":"Deployment","name":"web","condition":"Available=True"}`, exagentv1.CallStarted)).Obj()
	run.Status.Calls[0].Wait = &exagentv1.CallWait{Kind: exagentv1.WaitObject, Since: metav1.NewMicroTime(t0.Add(-time.Minute)),
		Until:  metav1.NewMicroTime(t0.Add(10 * time.Minute)),
		Object: &exagentv1.WaitedObject{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web", Condition: "Available=True"}}
	var buf bytes.Buffer
	if err := renderShow(&buf, showView{Run: run, Now: t0}); err != nil {
		t.Fatal(err)
	}
	since, until := t0.Add(-time.Minute).UTC().Format(time.RFC3339), t0.Add(10*time.Minute).UTC().Format(time.RFC3339)
	for _, want := range []string{
		"Waiting (no worker holds the run; it resumes on its own, kubectl approve cancel rollout stops it):\n",
		"  c1:" + strings.Repeat(" ", labelWidth-4) + "wait_ready Object Deployment demo/web Available=True since " + since + ", until " + until + " (in 10m0s)\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("show output lacks %q:\n%s", want, buf.String())
		}
	}
}
