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
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// TestVerifyDecision is the controller's re-check (authz.VerifyDecision)
// against the real apiserver: the same SubjectAccessReview, approvers and
// self-approval checks as admission, on decisions as they are stored.
func TestVerifyDecision(t *testing.T) {
	s := newScenario(t)
	payments := get(t, s.ns, "payments", &exagentv1.Agent{})
	paid := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	uncertain := get(t, s.ns, runUncertain, &exagentv1.AgentRun{})

	by := func(user string, groups ...string) func(*exagentv1.ApprovalDecision) {
		return func(d *exagentv1.ApprovalDecision) {
			d.Spec.Actor = &exagentv1.Actor{Username: user, Groups: append(groups, "system:authenticated")}
		}
	}
	cases := map[string]struct {
		d         *exagentv1.ApprovalDecision
		run       *exagentv1.AgentRun
		agent     *exagentv1.Agent
		wantCheck authz.Check
	}{
		"an approver":       {d: with(approve(s.ns, "d", runPayments), by("alice", "payments-approvers")), run: paid, agent: payments},
		"a resolver":        {d: with(resolve(s.ns, "d", runUncertain), by("grace", "payments-approvers")), run: uncertain, agent: payments},
		"no stamped actor":  {d: approve(s.ns, "d", runPayments), run: paid, agent: payments, wantCheck: authz.CheckActor},
		"no RBAC verb":      {d: with(approve(s.ns, "d", runPayments), by("bob", "payments-approvers")), run: paid, agent: payments, wantCheck: authz.CheckRBAC},
		"approve ≠ resolve": {d: with(resolve(s.ns, "d", runUncertain), by("alice", "payments-approvers")), run: uncertain, agent: payments, wantCheck: authz.CheckRBAC},
		"not an approver":   {d: with(approve(s.ns, "d", runPayments), by("carol")), run: paid, agent: payments, wantCheck: authz.CheckApprovers},
		"the requester":     {d: with(approve(s.ns, "d", runPayments), by("dave", "payments-approvers")), run: paid, agent: payments, wantCheck: authz.CheckSelfApproval},
		"the agent is gone": {d: with(approve(s.ns, "d", runPayments), by("alice", "payments-approvers")), run: paid, wantCheck: authz.CheckAgent},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := authz.VerifyDecision(t.Context(), admin, tc.d, tc.run, tc.agent)
			if diff := cmp.Diff(tc.wantCheck, authz.DeniedCheck(err)); diff != "" {
				t.Errorf("failed check (-want +got):\n%s\nerror: %v", diff, err)
			}
			if err != nil && !authz.IsDenied(err) {
				t.Errorf("transient error where a denial was expected: %v", err)
			}
		})
	}
}

func get[T client.Object](t *testing.T, ns, name string, obj T) T {
	t.Helper()
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("get %s/%s: %v", ns, name, err)
	}
	return obj
}
