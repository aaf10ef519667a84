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

	rbacv1 "k8s.io/api/rbac/v1"
)

// scenario is one namespace with two Agents and three paused runs, all
// requested by dave, and the suite's users bound as their names say.
type scenario struct {
	ns string
}

const (
	runPayments  = "pay-1"  // agent payments, approval a1 pending
	runBilling   = "bill-1" // agent billing, approval a1 pending
	runUncertain = "pay-u"  // agent payments, call c1 Uncertain
)

func newScenario(t *testing.T) scenario {
	t.Helper()
	ns := newNamespace(t)
	createAgent(t, ns, "payments")
	createAgent(t, ns, "billing")

	bind(t, ns, "alice", "ClusterRole", "exagent-approver")
	createRole(t, ns, "decision-writer",
		rbacv1.PolicyRule{APIGroups: []string{"exagent.io"}, Resources: []string{"approvaldecisions"}, Verbs: []string{"create"}})
	bind(t, ns, "bob", "Role", "decision-writer")
	bind(t, ns, "carol", "ClusterRole", "exagent-approver")
	bind(t, ns, "dave", "ClusterRole", "exagent-editor")
	bind(t, ns, "dave", "ClusterRole", "exagent-approver")
	createRole(t, ns, "approve-payments-only",
		rbacv1.PolicyRule{APIGroups: []string{"exagent.io"}, Resources: []string{"agents/approval"}, ResourceNames: []string{"payments"}, Verbs: []string{"approve"}},
		rbacv1.PolicyRule{APIGroups: []string{"exagent.io"}, Resources: []string{"approvaldecisions"}, Verbs: []string{"create"}})
	bind(t, ns, "erin", "Role", "approve-payments-only")
	bind(t, ns, "grace", "ClusterRole", "exagent-resolver")

	dave := as(t, "dave")
	createPausedRun(t, dave, ns, runPayments, "payments", false)
	createPausedRun(t, dave, ns, runBilling, "billing", false)
	createPausedRun(t, dave, ns, runUncertain, "payments", true)
	return scenario{ns: ns}
}
