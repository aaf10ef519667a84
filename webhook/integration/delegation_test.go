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

package integration_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestChildRunAdmission: only the manager creates runs with
// spec.delegation, and such a child keeps the root's requester (sealed);
// a decision on the child must pass every ancestor's approvers and
// forbidSelfApproval at admission.
func TestChildRunAdmission(t *testing.T) {
	s := newScenario(t)
	// "open" lets anyone with the RBAC verb decide: only the root's policy narrows.
	open := &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "open", Namespace: s.ns}, Spec: exagentv1.AgentSpec{
		Model: fixture.Scripted(fixture.TextTurn("x")),
	}}
	if err := admin.Create(t.Context(), open); err != nil {
		t.Fatal(err)
	}
	root := &exagentv1.AgentRun{}
	if err := admin.Get(t.Context(), types.NamespacedName{Namespace: s.ns, Name: runPayments}, root); err != nil {
		t.Fatal(err)
	}
	childOf := func(name string) *exagentv1.AgentRun {
		return &exagentv1.AgentRun{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns,
				Labels: map[string]string{exagentv1.LabelParentRun: root.Name, exagentv1.LabelRootRun: root.Name}},
			Spec: exagentv1.AgentRunSpec{
				AgentRef: exagentv1.LocalObjectReference{Name: "open"}, Input: "deploy",
				RequestedBy: root.Spec.RequestedBy.DeepCopy(),
				Delegation: &exagentv1.Delegation{
					Parent: exagentv1.RunReference{Name: root.Name, UID: string(root.UID)},
					Root:   exagentv1.RunReference{Name: root.Name, UID: string(root.UID)},
					CallID: "c1", Ancestry: []string{string(root.UID) + "/c1"},
				},
			},
		}
	}

	forged := childOf("forged-child")
	err := as(t, "dave").Create(t.Context(), forged)
	if err == nil || !strings.Contains(err.Error(), "spec.delegation: Forbidden") {
		t.Fatalf("dave creating a child run: %v, want spec.delegation Forbidden", err)
	}

	child := childOf("payments-child")
	if err := admin.Create(t.Context(), child); err != nil {
		t.Fatalf("the manager creating a child run: %v", err)
	}
	if child.Spec.RequestedBy == nil || child.Spec.RequestedBy.Username != "dave" {
		t.Errorf("child requestedBy = %+v, want the root's (dave)", child.Spec.RequestedBy)
	}
	if err := signer.VerifyRequester(child); err != nil {
		t.Errorf("the child's requester is not sealed: %v", err)
	}

	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	child.Status = exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseAwaitingApproval, Revision: 1,
		Cursor: exagentv1.Cursor{Step: 1, Stage: exagentv1.StageBatch},
		Calls:  []exagentv1.ToolCall{{ID: "c1", Tool: "pay", Args: `{}`, PayloadHash: payloadHash, State: exagentv1.CallPending}},
		Approvals: []exagentv1.Approval{{ID: "a1", CallID: "c1", PayloadHash: payloadHash, Revision: 1,
			State: exagentv1.ApprovalPending, RequestedAt: now}},
		PendingApprovals: 1,
	}
	if err := admin.Status().Update(t.Context(), child); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		user, wantDenied string
	}{
		"an approver of the child's Agent the root's Agent does not list": {user: "carol", wantDenied: "ancestor run " + root.Name},
		"the root's requester":             {user: "dave", wantDenied: "ancestor run " + root.Name},
		"an approver every ancestor lists": {user: "alice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := as(t, tc.user).Create(t.Context(), approve(s.ns, "child-"+tc.user, child.Name))
			if tc.wantDenied == "" {
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantDenied) {
				t.Fatalf("got %v, want denied naming %q", err, tc.wantDenied)
			}
		})
	}
}
