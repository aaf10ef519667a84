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

package ui

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

func TestRowsOf(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	agent := fixture.MakeAgent("payments", "team").Approvers("alice").ForbidSelf().Obj()
	agent.Spec.Tools = []exagentv1.ToolSpec{{Name: "charge", Parameters: &runtime.RawExtension{Raw: []byte(`{"type":"object"}`)}}}
	waiting := func(edit func(*exagentv1.AgentRun)) *exagentv1.AgentRun {
		r := fixture.MakeRun("pay", "team").Agent("payments").RequestedBy("carol").Obj()
		r.Status.Phase = exagentv1.PhaseAwaitingApproval
		r.Status.Calls = []exagentv1.ToolCall{{ID: "c1", Tool: "charge", Args: `{"amount":5}`, State: exagentv1.CallPending}}
		r.Status.Approvals = []exagentv1.Approval{{ID: "c1-r1", CallID: "c1", State: exagentv1.ApprovalPending, Rule: "charges", RequestedAt: at}}
		if edit != nil {
			edit(r)
		}
		return r
	}
	base := inboxRow{Key: "team/pay/c1-r1", Namespace: "team", Run: "pay", Agent: "payments", ApprovalID: "c1-r1", CallID: "c1",
		Tool: "charge", Args: "{\n  \"amount\": 5\n}", Rule: "rule charges", Requested: at.Time, Schema: "{\n  \"type\": \"object\"\n}",
		Deciders: `verb approve on agents/approval "payments" in team, and one of: user alice; not the run's requester (carol)`}
	tc := map[string]struct {
		run   *exagentv1.AgentRun
		agent *exagentv1.Agent
		want  []inboxRow
	}{
		"waiting": {run: waiting(nil), agent: agent, want: []inboxRow{base}},
		"the Agent unreadable: the RBAC verb alone": {run: waiting(nil), want: []inboxRow{func() inboxRow {
			r := base
			r.Deciders, r.Schema = `verb approve on agents/approval "payments" in team`, ""
			return r
		}()}},
		"running: nothing waits": {run: waiting(func(r *exagentv1.AgentRun) { r.Status.Phase = exagentv1.PhaseRunning }), agent: agent},
		"decided: nothing waits": {run: waiting(func(r *exagentv1.AgentRun) { r.Status.Approvals[0].State = exagentv1.ApprovalApproved }), agent: agent},
		"a quorum with one vote": {run: waiting(func(r *exagentv1.AgentRun) {
			r.Status.Approvals[0].Quorum = &exagentv1.Quorum{Approvals: 2}
			r.Status.Approvals[0].Votes = []exagentv1.Vote{{Actor: exagentv1.Actor{Username: "frank"}, OperationID: "op", At: at}}
		}), agent: agent, want: []inboxRow{func() inboxRow {
			r := base
			r.Quorum, r.Needed, r.Votes, r.Needs = "2 approvals", 2, []string{"frank"}, "needs 1 more approval"
			return r
		}()}},
		"a child names its root": {run: waiting(func(r *exagentv1.AgentRun) {
			r.Spec.Delegation = &exagentv1.Delegation{Parent: exagentv1.RunReference{Name: "triage"}, Root: exagentv1.RunReference{Name: "triage"}}
		}), agent: agent, want: []inboxRow{func() inboxRow { r := base; r.Root = "triage"; return r }()}},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			got := rowsOf(tc.run, tc.agent)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rowsOf (-want +got):\n%s", diff)
			}
		})
	}
}
