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

package authz_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/loop"
)

func actor(name string, groups ...string) exagentv1.Actor {
	return exagentv1.Actor{Username: name, Groups: groups}
}

func requestedBy(name string) *exagentv1.AgentRunSpec {
	return &exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, RequestedBy: &exagentv1.Actor{Username: name}}
}

func TestCheckPolicy(t *testing.T) {
	approvers := &exagentv1.Approvers{
		Users:           []string{"alice"},
		Groups:          []string{"payments-approvers"},
		ServiceAccounts: []string{"ops/releaser"},
	}
	cases := map[string]struct {
		policy    exagentv1.PolicySpec
		run       *exagentv1.AgentRunSpec
		ids       *loop.Identities
		actor     exagentv1.Actor
		wantCheck authz.Check
		wantMsg   string
	}{
		"no approvers: RBAC alone": {
			run: requestedBy("zed"), actor: actor("bob"),
		},
		"empty approvers: RBAC alone, never everyone-or-no-one": {
			policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{}},
			run:    requestedBy("zed"), actor: actor("bob"),
		},
		"listed user": {
			policy: exagentv1.PolicySpec{Approvers: approvers},
			run:    requestedBy("zed"), actor: actor("alice"),
		},
		"listed group": {
			policy: exagentv1.PolicySpec{Approvers: approvers},
			run:    requestedBy("zed"), actor: actor("carol", "system:authenticated", "payments-approvers"),
		},
		"listed service account": {
			policy: exagentv1.PolicySpec{Approvers: approvers},
			run:    requestedBy("zed"), actor: actor("system:serviceaccount:ops:releaser"),
		},
		"service account of another namespace": {
			policy:    exagentv1.PolicySpec{Approvers: approvers},
			run:       requestedBy("zed"),
			actor:     actor("system:serviceaccount:dev:releaser"),
			wantCheck: authz.CheckApprovers,
			wantMsg:   `user "system:serviceaccount:dev:releaser" is not in policy.approvers of agent "payments" (users: [alice], groups: [payments-approvers], serviceAccounts: [ops/releaser])`,
		},
		"a user named like a service account entry is not one": {
			policy:    exagentv1.PolicySpec{Approvers: approvers},
			run:       requestedBy("zed"),
			actor:     actor("ops/releaser"),
			wantCheck: authz.CheckApprovers,
			wantMsg:   `user "ops/releaser" is not in policy.approvers of agent "payments" (users: [alice], groups: [payments-approvers], serviceAccounts: [ops/releaser])`,
		},
		"not listed": {
			policy:    exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{Groups: []string{"payments-approvers"}}},
			run:       requestedBy("zed"),
			actor:     actor("bob", "system:authenticated"),
			wantCheck: authz.CheckApprovers,
			wantMsg:   `user "bob" is not in policy.approvers of agent "payments" (users: [], groups: [payments-approvers], serviceAccounts: [])`,
		},
		"self approval forbidden": {
			policy:    exagentv1.PolicySpec{ForbidSelfApproval: true},
			run:       requestedBy("alice"),
			actor:     actor("alice"),
			wantCheck: authz.CheckSelfApproval,
			wantMsg:   `forbidSelfApproval: "alice" requested this run and cannot decide on it`,
		},
		"self approval through a stand-in": {
			policy:    exagentv1.PolicySpec{ForbidSelfApproval: true},
			run:       requestedBy("alice"),
			actor:     exagentv1.Actor{Username: "bob", Impersonated: true, ImpersonatedBy: "alice"},
			wantCheck: authz.CheckSelfApproval,
			wantMsg:   `forbidSelfApproval: "alice" requested this run and cannot decide on it`,
		},
		"self approval allowed when not forbidden": {
			run: requestedBy("alice"), actor: actor("alice"),
		},
		"another user with forbidSelfApproval": {
			policy: exagentv1.PolicySpec{ForbidSelfApproval: true},
			run:    requestedBy("alice"), actor: actor("bob"),
		},
		"forbidSelfApproval without a recorded requester fails closed": {
			policy:    exagentv1.PolicySpec{ForbidSelfApproval: true},
			run:       &exagentv1.AgentRunSpec{},
			actor:     actor("bob"),
			wantCheck: authz.CheckSelfApproval,
			wantMsg:   `forbidSelfApproval: the run has no spec.requestedBy, so its requester cannot be told apart from the decider`,
		},
		"the run's own ServiceAccount, even when listed": {
			policy:    exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{ServiceAccounts: []string{"payments/default"}}},
			run:       requestedBy("zed"),
			actor:     actor("system:serviceaccount:payments:default"),
			wantCheck: authz.CheckNeverDecider,
			wantMsg:   `user "system:serviceaccount:payments:default" is the run's own ServiceAccount (spec.serviceAccountName "default"): the identity a run acts as never decides on it`,
		},
		"the manager": {
			run:       requestedBy("zed"),
			actor:     actor("exagent-manager"),
			wantCheck: authz.CheckNeverDecider,
			wantMsg:   `user "exagent-manager" is the exagent manager's own identity: the operator that executes a run's calls never decides on them`,
		},
		"an unsealed requester under forbidSelfApproval": {
			policy:    exagentv1.PolicySpec{ForbidSelfApproval: true},
			run:       requestedBy("zed"),
			ids:       &loop.Identities{Namespace: "payments", RequesterUnverified: "no seal"},
			actor:     actor("bob"),
			wantCheck: authz.CheckSelfApproval,
			wantMsg:   `forbidSelfApproval: the run's requester is unknown (no seal), so it cannot be told apart from the decider; re-create the run through the exagent admission webhook`,
		},
		"approvers are checked before self approval": {
			policy:    exagentv1.PolicySpec{ForbidSelfApproval: true, Approvers: approvers},
			run:       requestedBy("bob"),
			actor:     actor("bob"),
			wantCheck: authz.CheckApprovers,
			wantMsg:   `user "bob" is not in policy.approvers of agent "payments" (users: [alice], groups: [payments-approvers], serviceAccounts: [ops/releaser])`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ids := loop.Identities{Namespace: "payments", Manager: []string{"exagent-manager"}}
			if tc.ids != nil {
				ids = *tc.ids
			}
			err := authz.CheckPolicy(tc.policy, tc.run, ids, tc.actor)
			if diff := cmp.Diff(tc.wantCheck, authz.DeniedCheck(err)); diff != "" {
				t.Errorf("check (-want +got):\n%s", diff)
			}
			gotMsg := ""
			if err != nil {
				gotMsg = err.Error()
			}
			if diff := cmp.Diff(tc.wantMsg, gotMsg); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if (err == nil) != !authz.IsDenied(err) {
				t.Errorf("IsDenied(%v) = %v", err, authz.IsDenied(err))
			}
		})
	}
}

func TestActorFromUserInfo(t *testing.T) {
	cases := map[string]struct {
		in   authenticationv1.UserInfo
		want exagentv1.Actor
	}{
		"client certificate": {
			in: authenticationv1.UserInfo{Username: "alice", Groups: []string{"a", "system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{authz.CredentialIDKey: {"X509SHA256=ab"}}},
			want: exagentv1.Actor{Username: "alice", Groups: []string{"a", "system:authenticated"}, Credential: exagentv1.CredentialCertificate},
		},
		"service account token": {
			in: authenticationv1.UserInfo{Username: "system:serviceaccount:ns:sa", UID: "u1",
				Extra: map[string]authenticationv1.ExtraValue{authz.CredentialIDKey: {"JTI=x"}}},
			want: exagentv1.Actor{Username: "system:serviceaccount:ns:sa", UID: "u1", Credential: exagentv1.CredentialServiceAccountToken},
		},
		"OIDC token with a jti claim": {
			in: authenticationv1.UserInfo{Username: "https://issuer#alice", Groups: []string{"system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{authz.CredentialIDKey: {"JTI=7f"}}},
			want: exagentv1.Actor{Username: "https://issuer#alice", Groups: []string{"system:authenticated"}, Credential: exagentv1.CredentialJWT},
		},
		// The case the old inference got wrong: an OIDC or token-webhook
		// login without a credential id is a person at their own keyboard,
		// not an impersonation. Nothing in the user info says which.
		"no credential id: unknown, not impersonated": {
			in:   authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
			want: exagentv1.Actor{Username: "alice", Groups: []string{"system:authenticated"}, Credential: exagentv1.CredentialUnknown},
		},
		"other extras are no evidence": {
			in: authenticationv1.UserInfo{Username: "alice", Extra: map[string]authenticationv1.ExtraValue{
				"scopes.authorization.openshift.io": {"user:full"}}},
			want: exagentv1.Actor{Username: "alice", Credential: exagentv1.CredentialUnknown},
		},
		"unrecognised credential id": {
			in: authenticationv1.UserInfo{Username: "alice",
				Extra: map[string]authenticationv1.ExtraValue{authz.CredentialIDKey: {"opaque-42"}}},
			want: exagentv1.Actor{Username: "alice", Credential: exagentv1.CredentialUnknown},
		},
		"empty certificate fingerprint": {
			in: authenticationv1.UserInfo{Username: "alice",
				Extra: map[string]authenticationv1.ExtraValue{authz.CredentialIDKey: {"X509SHA256="}}},
			want: exagentv1.Actor{Username: "alice", Credential: exagentv1.CredentialUnknown},
		},
		"two credential ids": {
			in: authenticationv1.UserInfo{Username: "alice",
				Extra: map[string]authenticationv1.ExtraValue{authz.CredentialIDKey: {"X509SHA256=ab", "JTI=x"}}},
			want: exagentv1.Actor{Username: "alice", Credential: exagentv1.CredentialUnknown},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, authz.ActorFromUserInfo(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSameActor(t *testing.T) {
	base := exagentv1.Actor{Username: "alice", UID: "1", Groups: []string{"a", "b"}}
	cases := map[string]struct {
		other exagentv1.Actor
		want  bool
	}{
		"identical":          {other: base, want: true},
		"groups reordered":   {other: exagentv1.Actor{Username: "alice", UID: "1", Groups: []string{"b", "a"}}, want: true},
		"other user":         {other: exagentv1.Actor{Username: "bob", UID: "1", Groups: []string{"a", "b"}}},
		"other uid":          {other: exagentv1.Actor{Username: "alice", UID: "2", Groups: []string{"a", "b"}}},
		"extra group":        {other: exagentv1.Actor{Username: "alice", UID: "1", Groups: []string{"a", "b", "system:masters"}}},
		"missing group":      {other: exagentv1.Actor{Username: "alice", UID: "1", Groups: []string{"a"}}},
		"claims not imperso": {other: exagentv1.Actor{Username: "alice", UID: "1", Groups: []string{"a", "b"}, Impersonated: true}},
		"other credential":   {other: exagentv1.Actor{Username: "alice", UID: "1", Groups: []string{"a", "b"}, Credential: exagentv1.CredentialCertificate}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := authz.SameActor(base, tc.other); got != tc.want {
				t.Errorf("SameActor = %v, want %v", got, tc.want)
			}
		})
	}
}
