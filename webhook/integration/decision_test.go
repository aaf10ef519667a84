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
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestDecisionAdmission is "who may decide" end to end: each user creates a
// decision with their own client certificate; the apiserver calls the
// webhooks over TLS; the webhook asks the apiserver's real RBAC.
func TestDecisionAdmission(t *testing.T) {
	s := newScenario(t)
	cases := map[string]struct {
		user string
		d    *exagentv1.ApprovalDecision
		// wantDenied is a substring of the refusal; empty means admitted.
		wantDenied string
	}{
		"an approver in the listed group approves": {
			user: "alice", d: approve(s.ns, "alice-approves", runPayments),
		},
		"an approver denies": {
			user: "alice", d: with(approve(s.ns, "alice-denies", runPayments), func(d *exagentv1.ApprovalDecision) {
				d.Spec.Decision = exagentv1.DecisionDeny
			}),
		},
		"an approver cancels the waiting run": {
			user: "alice", d: with(approve(s.ns, "alice-cancels", runPayments), func(d *exagentv1.ApprovalDecision) {
				d.Spec.Decision, d.Spec.ApprovalID = exagentv1.DecisionCancel, ""
			}),
		},
		"without the approve verb": {
			user: "bob", d: approve(s.ns, "bob-approves", runPayments),
			wantDenied: `you are not allowed to approve runs of agent "payments": missing verb "approve" on agents/approval`,
		},
		"with the verb but not in policy.approvers": {
			user: "carol", d: approve(s.ns, "carol-approves", runPayments),
			wantDenied: `user "carol" is not in policy.approvers of agent "payments" (users: [], groups: [payments-approvers], serviceAccounts: [])`,
		},
		"the requester under forbidSelfApproval": {
			user: "dave", d: approve(s.ns, "dave-approves", runPayments),
			wantDenied: `forbidSelfApproval: "dave" requested this run and cannot decide on it`,
		},
		"a forged actor": {
			user: "alice", d: with(approve(s.ns, "alice-as-carol", runPayments), func(d *exagentv1.ApprovalDecision) {
				d.Spec.Actor = &exagentv1.Actor{Username: "carol", Groups: []string{"payments-approvers", "system:authenticated"}}
			}),
			wantDenied: `spec.actor: Forbidden: is stamped from the authenticated user "alice"; a client-written identity ("carol") is not accepted`,
		},
		"RBAC scoped by resourceNames: the named agent": {
			user: "erin", d: approve(s.ns, "erin-approves-payments", runPayments),
		},
		"RBAC scoped by resourceNames: another agent": {
			user: "erin", d: approve(s.ns, "erin-approves-billing", runBilling),
			wantDenied: `you are not allowed to approve runs of agent "billing": missing verb "approve" on agents/approval`,
		},
		"a ClusterRole binding covers every agent of the namespace": {
			user: "alice", d: approve(s.ns, "alice-approves-billing", runBilling),
		},
		"Resolve by an approver without resolve": {
			user: "alice", d: resolve(s.ns, "alice-resolves", runUncertain),
			wantDenied: `you are not allowed to resolve runs of agent "payments": missing verb "resolve" on agents/approval`,
		},
		"Resolve by a resolver": {
			user: "grace", d: resolve(s.ns, "grace-resolves", runUncertain),
		},
		"resolve does not imply approve": {
			user: "grace", d: approve(s.ns, "grace-approves", runPayments),
			wantDenied: `missing verb "approve" on agents/approval`,
		},
		"Resolve of a call that is not Uncertain": {
			user: "grace", d: resolve(s.ns, "grace-resolves-pending", runPayments),
			wantDenied: `spec.callID: Invalid value: "c1": call is Pending, not Uncertain`,
		},
		"a stale revision": {
			user: "alice", d: with(approve(s.ns, "alice-stale", runPayments), func(d *exagentv1.ApprovalDecision) { d.Spec.Revision = 2 }),
			wantDenied: `spec.revision: Invalid value: 2: the approval is at revision 1`,
		},
		"a changed payload": {
			user: "alice", d: with(approve(s.ns, "alice-other-payload", runPayments), func(d *exagentv1.ApprovalDecision) { d.Spec.PayloadHash = "sha256:other" }),
			wantDenied: `spec.payloadHash: Invalid value: "sha256:other"`,
		},
		"a decision bound to a run deleted since (another run UID)": {
			user: "alice", d: with(approve(s.ns, "alice-other-run", runPayments), func(d *exagentv1.ApprovalDecision) { d.Spec.RunUID = "uid-of-a-deleted-run" }),
			wantDenied: `spec.runUID: Invalid value: "uid-of-a-deleted-run": the run was re-created since you looked (uid uid-of-a-deleted-run, now `,
		},
		"an unknown approval": {
			user: "alice", d: with(approve(s.ns, "alice-a9", runPayments), func(d *exagentv1.ApprovalDecision) { d.Spec.ApprovalID = "a9" }),
			wantDenied: `spec.approvalID: Not found: "a9"`,
		},
		"a missing run": {
			user: "alice", d: approve(s.ns, "alice-nothing", "nope"),
			wantDenied: `spec.runRef.name: Not found: "nope"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := as(t, tc.user).Create(t.Context(), tc.d)
			if tc.wantDenied != "" {
				if err == nil {
					t.Fatalf("admitted; want denied with %q", tc.wantDenied)
				}
				if !strings.Contains(err.Error(), tc.wantDenied) {
					t.Fatalf("denied with:\n  %v\nwant it to contain:\n  %s", err, tc.wantDenied)
				}
				t.Logf("denied as expected: %v", err)
				assertAbsent(t, tc.d)
				return
			}
			if err != nil {
				t.Fatalf("denied: %v", err)
			}
			stored := &exagentv1.ApprovalDecision{}
			if err := admin.Get(t.Context(), client.ObjectKeyFromObject(tc.d), stored); err != nil {
				t.Fatal(err)
			}
			want := &exagentv1.Actor{Username: tc.user, Groups: []string{"payments-approvers", "system:authenticated"},
				Credential: exagentv1.CredentialCertificate}
			if diff := cmp.Diff(want, stored.Spec.Actor); diff != "" {
				t.Errorf("stamped actor (-want +got):\n%s", diff)
			}
			if stored.Spec.OperationID != stored.Name {
				t.Errorf("operationID = %q, want the object's name %q", stored.Spec.OperationID, stored.Name)
			}
		})
	}
}

// TestImpersonatedDecision: an admin deciding with kubectl --as is recorded
// as the impersonated user. The apiserver tells the webhook nothing of the
// impersonation (the user info is exactly what the Impersonate-* headers
// asked for; only the audit log names the impersonator), so the record
// says what is known — credential Unknown — and does not claim
// impersonated: true without evidence; the same user deciding with their
// own certificate is recorded with credential Certificate.
func TestImpersonatedDecision(t *testing.T) {
	s := newScenario(t)
	d := approve(s.ns, "admin-as-alice", runPayments)
	if err := impersonating(t, "alice", "payments-approvers").Create(t.Context(), d); err != nil {
		t.Fatalf("denied: %v", err)
	}
	want := &exagentv1.Actor{Username: "alice", Groups: []string{"payments-approvers", "system:authenticated"},
		Credential: exagentv1.CredentialUnknown}
	if diff := cmp.Diff(want, d.Spec.Actor); diff != "" {
		t.Errorf("actor (-want +got):\n%s", diff)
	}

	// Impersonation does not launder rights: impersonating carol (not
	// listed) is judged as carol.
	err := impersonating(t, "carol").Create(t.Context(), approve(s.ns, "admin-as-carol", runPayments))
	if err == nil || !strings.Contains(err.Error(), `user "carol" is not in policy.approvers`) {
		t.Errorf("impersonating carol: got %v, want the approvers denial", err)
	}
}

// TestStampedCredential: the credential kind recorded for each real way of
// authenticating — a client certificate, a ServiceAccount token from the
// TokenRequest API, and impersonation — read from what the apiserver put
// in the admission request's user info, never inferred from an absence.
func TestStampedCredential(t *testing.T) {
	s := newScenario(t)
	runner := serviceAccountClient(t, s.ns, "runner", "exagent-editor")
	runnerUID := string(get(t, s.ns, "runner", &corev1.ServiceAccount{}).UID)
	cases := map[string]struct {
		c          client.Client
		wantUser   string
		wantUID    string
		wantGroups []string
		want       exagentv1.CredentialKind
	}{
		"client certificate": {c: as(t, "dave"), wantUser: "dave",
			wantGroups: []string{"payments-approvers", "system:authenticated"}, want: exagentv1.CredentialCertificate},
		"ServiceAccount token": {c: runner, wantUser: "system:serviceaccount:" + s.ns + ":runner", wantUID: runnerUID,
			wantGroups: []string{"system:serviceaccounts", "system:serviceaccounts:" + s.ns, "system:authenticated"},
			want:       exagentv1.CredentialServiceAccountToken},
		"impersonation: no evidence either way": {c: impersonating(t, "dave", "payments-approvers"), wantUser: "dave",
			wantGroups: []string{"payments-approvers", "system:authenticated"}, want: exagentv1.CredentialUnknown},
	}
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			r := &exagentv1.AgentRun{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cred-%d", i), Namespace: s.ns},
				Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "hello"},
			}
			if err := tc.c.Create(t.Context(), r); err != nil {
				t.Fatalf("creating a run: %v", err)
			}
			stored := get(t, s.ns, r.Name, &exagentv1.AgentRun{})
			got := stored.Spec.RequestedBy
			if got == nil {
				t.Fatal("no requestedBy stamped")
			}
			want := &exagentv1.Actor{Username: tc.wantUser, UID: tc.wantUID, Groups: tc.wantGroups, Credential: tc.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requestedBy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecisionSpecIsImmutable: a decision cannot be rewritten after the
// fact (not even by the admin); metadata can change and deletes are allowed.
func TestDecisionSpecIsImmutable(t *testing.T) {
	s := newScenario(t)
	d := approve(s.ns, "alice-approves", runPayments)
	if err := as(t, "alice").Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	changed := d.DeepCopy()
	changed.Spec.Reason = "rewritten later"
	err := admin.Update(t.Context(), changed)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("update of spec: got %v, want Invalid: spec is immutable", err)
	}
	forged := d.DeepCopy()
	forged.Spec.Actor.Username = "carol"
	if err := admin.Update(t.Context(), forged); !apierrors.IsInvalid(err) {
		t.Fatalf("update of the actor: got %v, want Invalid", err)
	}

	labelled := d.DeepCopy()
	labelled.Labels = map[string]string{"team": "payments"}
	if err := admin.Update(t.Context(), labelled); err != nil {
		t.Fatalf("update of metadata: %v", err)
	}
	if err := admin.Delete(t.Context(), labelled); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func with(d *exagentv1.ApprovalDecision, mut func(*exagentv1.ApprovalDecision)) *exagentv1.ApprovalDecision {
	mut(d)
	return d
}

// assertAbsent checks that a refused object was not stored.
func assertAbsent(t *testing.T, obj client.Object) {
	t.Helper()
	err := admin.Get(t.Context(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if !apierrors.IsNotFound(err) {
		t.Errorf("refused object %s: Get returned %v, want NotFound", obj.GetName(), err)
	}
}
