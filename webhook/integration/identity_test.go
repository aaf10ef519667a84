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

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// serviceAccountClient creates ServiceAccount name in ns, binds role to it
// and returns a client authenticated with one of its tokens.
func serviceAccountClient(t *testing.T, ns, name, role string) client.Client {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := admin.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + role, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	if err := admin.Create(t.Context(), rb); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := admin.SubResource("token").Create(t.Context(), sa, tr); err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNeverDecidersAdmission: the run's own ServiceAccount (its real
// token, with the approve verb) and the manager's identity (the admin here,
// whose credentials the webhook's manager uses) are refused as deciders at
// admission, whatever RBAC grants them.
func TestNeverDecidersAdmission(t *testing.T) {
	s := newScenario(t)
	robot := serviceAccountClient(t, s.ns, "robot", "exagent-approver")
	// dave may have his runs act as robot (TestServiceAccountAdmission).
	createRole(t, s.ns, "use-robot", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
		ResourceNames: []string{"robot"}, Verbs: []string{"use"}})
	bind(t, s.ns, "dave", "Role", "use-robot")
	waitAllowed(t, "dave", authorizationv1.ResourceAttributes{Namespace: s.ns, Verb: "use", Resource: "serviceaccounts", Name: "robot"})
	createPausedRun(t, as(t, "dave"), s.ns, "robot-run", "payments", false,
		func(r *exagentv1.AgentRunSpec) { r.ServiceAccountName = "robot" })

	manager, err := authz.Self(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		c       client.Client
		d       *exagentv1.ApprovalDecision
		wantMsg string
	}{
		"the run's own ServiceAccount": {c: robot, d: approve(s.ns, "robot-approves", "robot-run"),
			wantMsg: `user "system:serviceaccount:` + s.ns + `:robot" is the run's own ServiceAccount (spec.serviceAccountName "robot")`},
		"the run's own ServiceAccount cancelling": {c: robot, d: with(approve(s.ns, "robot-cancels", "robot-run"), func(d *exagentv1.ApprovalDecision) {
			d.Spec.Decision, d.Spec.ApprovalID, d.Spec.PayloadHash = exagentv1.DecisionCancel, "", ""
		}), wantMsg: "is the run's own ServiceAccount"},
		"the manager's identity": {c: admin, d: approve(s.ns, "manager-approves", runPayments),
			wantMsg: `user "` + manager + `" is the exagent manager's own identity`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.c.Create(t.Context(), tc.d)
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("got %v, want refused with %q", err, tc.wantMsg)
			}
			assertAbsent(t, tc.d)
		})
	}
	t.Run("another ServiceAccount with the verb may decide", func(t *testing.T) {
		// Not in the Agent's approvers (a group), so refused — but by the
		// approvers check, not as a never-decider: being a ServiceAccount is
		// not what disqualifies.
		other := serviceAccountClient(t, s.ns, "releaser", "exagent-approver")
		err := other.Create(t.Context(), approve(s.ns, "releaser-approves", "robot-run"))
		if err == nil || !strings.Contains(err.Error(), "is not in policy.approvers") {
			t.Fatalf("got %v, want the approvers refusal", err)
		}
	})
}

// TestRequesterSealAdmission: runs created through the webhook carry the
// seal of their requester (by name or generateName). A run stored past a
// bypassed webhook with a forged requestedBy has an unknown requester:
// under forbidSelfApproval its real author cannot approve it, though he
// named someone else.
func TestRequesterSealAdmission(t *testing.T) {
	s := newScenario(t)
	dave := as(t, "dave")
	stamped := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	if stamped.Annotations[authz.RequesterSignatureAnnotation] == "" {
		t.Fatalf("a run created through the webhook has no %s annotation", authz.RequesterSignatureAnnotation)
	}
	if err := signer.VerifyRequester(stamped); err != nil {
		t.Errorf("the webhook's requester seal does not verify: %v", err)
	}
	generated := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{GenerateName: "pay-", Namespace: s.ns},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "pay"}}
	if err := dave.Create(t.Context(), generated); err != nil {
		t.Fatal(err)
	}
	if err := signer.VerifyRequester(get(t, s.ns, generated.Name, &exagentv1.AgentRun{})); err != nil {
		t.Errorf("a run created with generateName: %v", err)
	}

	// dave may create runs and approve; forbidSelfApproval keeps him from
	// approving his own. Past a bypassed webhook he names erin instead.
	restore := deleteWebhooks(t)
	eventually(t, "the apiserver stops calling the webhooks", func() bool {
		probe := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: s.ns},
			Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "x",
				RequestedBy: &exagentv1.Actor{Username: "erin"}}}
		return dave.Create(t.Context(), probe, client.DryRunAll) == nil
	})
	forged := createPausedRun(t, dave, s.ns, "forged", "payments", false, func(r *exagentv1.AgentRunSpec) {
		r.RequestedBy = &exagentv1.Actor{Username: "erin", Groups: []string{"payments-approvers", "system:authenticated"}}
	})
	if diff := cmp.Diff("erin", forged.Spec.RequestedBy.Username); diff != "" {
		t.Fatalf("the bypassed webhook should have stored the forged requester: %s", diff)
	}
	restore()
	eventually(t, "the webhooks are called again", func() bool {
		err := as(t, "bob").Create(t.Context(), approve(s.ns, "probe", runPayments), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), `missing verb "approve"`)
	})

	err := dave.Create(t.Context(), approve(s.ns, "dave-approves-forged", "forged"))
	if err == nil || !strings.Contains(err.Error(), "forbidSelfApproval: the run's requester is unknown") ||
		!strings.Contains(err.Error(), "no "+authz.RequesterSignatureAnnotation+" annotation") {
		t.Fatalf("dave approving the run he created under erin's name: got %v, want refused (requester unknown)", err)
	}
	paid := get(t, s.ns, "forged", &exagentv1.AgentRun{})
	agent := get(t, s.ns, "payments", &exagentv1.Agent{})
	d := approve(s.ns, "d", "forged")
	d.Spec.Actor = &exagentv1.Actor{Username: "alice", Groups: []string{"payments-approvers", "system:authenticated"}}
	if err := authz.VerifyDecision(t.Context(), admin, d, paid, agent); err != nil {
		t.Errorf("without a seal configured, the stored requester is trusted as before: %v", err)
	}
}

// TestDecisionSealBindsTheRun: a decision admitted for a run does not
// apply to another run created later under the same name — its seal covers
// the UID of the run it was admitted for.
func TestDecisionSealBindsTheRun(t *testing.T) {
	s := newScenario(t)
	d := approve(s.ns, "alice-approves-first", runPayments)
	if err := as(t, "alice").Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	first := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	stored := get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{})
	if got := stored.Annotations[authz.RunUIDAnnotation]; got != string(first.UID) {
		t.Errorf("%s = %q, want the run's UID %s", authz.RunUIDAnnotation, got, first.UID)
	}
	if err := admin.Delete(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first run is gone", func() bool {
		return admin.Get(t.Context(), client.ObjectKeyFromObject(first), &exagentv1.AgentRun{}) != nil
	})
	second := createPausedRun(t, as(t, "dave"), s.ns, runPayments, "payments", false)
	agent := get(t, s.ns, "payments", &exagentv1.Agent{})
	err := authz.VerifyDecision(t.Context(), admin, stored, second, agent, authz.WithSigner(signer))
	if authz.DeniedCheck(err) != authz.CheckActor || !strings.Contains(err.Error(), "admitted for an earlier run") {
		t.Fatalf("re-check on the re-created run: %v, want the decision refused", err)
	}
	startDecisionController(t, s.ns)
	if got := waitForResult(t, d); got.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(got.Status.Message, "earlier run") {
		t.Errorf("decision = %s (%s), want Rejected: it was for the earlier run", got.Status.Phase, got.Status.Message)
	}
	if after := get(t, s.ns, runPayments, &exagentv1.AgentRun{}); after.Status.Approvals[0].State != exagentv1.ApprovalPending {
		t.Errorf("the re-created run's approval is %s, want Pending", after.Status.Approvals[0].State)
	}
}
