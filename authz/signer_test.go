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
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

const runUID = types.UID("0b5c-run-1")

func sealedDecision(t *testing.T, s *authz.Signer) *exagentv1.ApprovalDecision {
	t.Helper()
	d := &exagentv1.ApprovalDecision{
		ObjectMeta: metav1.ObjectMeta{Name: "d1", Namespace: "ns"},
		Spec: exagentv1.ApprovalDecisionSpec{
			RunRef:     exagentv1.LocalObjectReference{Name: "run"},
			ApprovalID: "a1", Decision: exagentv1.DecisionApprove, OperationID: "d1",
			Actor: &exagentv1.Actor{Username: "alice", Groups: []string{"g", "system:authenticated"}},
		},
	}
	if err := s.Sign(d, runUID); err != nil {
		t.Fatal(err)
	}
	return d
}

func signers(t *testing.T) (*authz.Signer, *authz.Signer) {
	t.Helper()
	signer, err := authz.NewSigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, err := authz.NewSigner(bytes.Repeat([]byte{8}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return signer, other
}

func TestDecisionSignature(t *testing.T) {
	signer, other := signers(t)
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: "ns", UID: runUID}}
	cases := map[string]struct {
		mut       func(*exagentv1.ApprovalDecision, *exagentv1.AgentRun)
		verifier  *authz.Signer
		wantCheck authz.Check
		wantMsg   string
	}{
		"as admitted": {mut: func(*exagentv1.ApprovalDecision, *exagentv1.AgentRun) {}},
		"other metadata may change": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) {
			d.Labels = map[string]string{"a": "b"}
		}},
		"no signature": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) {
			delete(d.Annotations, authz.SignatureAnnotation)
		}, wantCheck: authz.CheckActor, wantMsg: "not admitted by the exagent admission webhook"},
		"forged actor": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) {
			d.Spec.Actor.Username = "mallory"
		}, wantCheck: authz.CheckActor, wantMsg: "does not match its spec"},
		"an added group": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) {
			d.Spec.Actor.Groups = append(d.Spec.Actor.Groups, "system:masters")
		}, wantCheck: authz.CheckActor},
		"another decision": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) {
			d.Spec.Decision = exagentv1.DecisionDeny
		}, wantCheck: authz.CheckActor},
		"copied under another name": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) { d.Name = "d2" }}, // same spec and operationID: the same decision
		"copied to another namespace": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) {
			d.Namespace = "other"
		}, wantCheck: authz.CheckActor},
		"the run was re-created under its name": {mut: func(_ *exagentv1.ApprovalDecision, r *exagentv1.AgentRun) {
			r.UID = "77aa-run-2"
		}, wantCheck: authz.CheckActor, wantMsg: `admitted for an earlier run named "run" (uid 0b5c-run-1), not this one (uid 77aa-run-2)`},
		"the run was re-created and the uid annotation edited to match": {mut: func(d *exagentv1.ApprovalDecision, r *exagentv1.AgentRun) {
			r.UID = "77aa-run-2"
			d.Annotations[authz.RunUIDAnnotation] = "77aa-run-2"
		}, wantCheck: authz.CheckActor, wantMsg: "does not match its spec"},
		"a signature of an older manager": {mut: func(d *exagentv1.ApprovalDecision, _ *exagentv1.AgentRun) {
			d.Annotations[authz.SignatureAnnotation] = "v1.abc"
		}, wantCheck: authz.CheckActor, wantMsg: "made by an older exagent manager"},
		"another key": {mut: func(*exagentv1.ApprovalDecision, *exagentv1.AgentRun) {}, verifier: other, wantCheck: authz.CheckActor},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := sealedDecision(t, signer)
			r := run.DeepCopy()
			tc.mut(d, r)
			v := signer
			if tc.verifier != nil {
				v = tc.verifier
			}
			err := v.Verify(d, r)
			if diff := cmp.Diff(tc.wantCheck, authz.DeniedCheck(err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tc.wantMsg)) {
				t.Errorf("error %v, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

// TestRequesterSignature: spec.requestedBy counts only with the webhook's signature
// over the run's namespace, name (or generateName) and spec.
func TestRequesterSignature(t *testing.T) {
	signer, other := signers(t)
	newRun := func(name, generateName string) *exagentv1.AgentRun {
		return &exagentv1.AgentRun{
			ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: generateName, Namespace: "ns"},
			Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "pay 42",
				RequestedBy: &exagentv1.Actor{Username: "dave", Groups: []string{"system:authenticated"}}},
		}
	}
	stamped := func(r *exagentv1.AgentRun) *exagentv1.AgentRun {
		if err := signer.SignRequester(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	cases := map[string]struct {
		run      func() *exagentv1.AgentRun
		verifier *authz.Signer
		wantErr  string
	}{
		"as admitted": {run: func() *exagentv1.AgentRun { return stamped(newRun("r1", "")) }},
		"admitted with generateName, named later": {run: func() *exagentv1.AgentRun {
			r := stamped(newRun("", "pay-"))
			r.Name = "pay-x7k2q"
			return r
		}},
		"no signature: created past the webhook": {run: func() *exagentv1.AgentRun { return newRun("r1", "") },
			wantErr: "the run has no exagent.io/requester-seal annotation"},
		"a forged requester": {run: func() *exagentv1.AgentRun {
			r := stamped(newRun("r1", ""))
			r.Spec.RequestedBy.Username = "alice"
			return r
		}, wantErr: "does not match its spec"},
		"a signature copied onto a run that asks for something else": {run: func() *exagentv1.AgentRun {
			r := stamped(newRun("r1", ""))
			r.Spec.Input = "pay 4200"
			return r
		}, wantErr: "does not match its spec"},
		"a signature copied onto another name": {run: func() *exagentv1.AgentRun {
			r := stamped(newRun("r1", ""))
			r.Name = "r2"
			return r
		}, wantErr: "does not match its spec"},
		"another key": {run: func() *exagentv1.AgentRun { return stamped(newRun("r1", "")) }, verifier: other, wantErr: "does not match"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := signer
			if tc.verifier != nil {
				v = tc.verifier
			}
			err := v.VerifyRequester(tc.run())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("VerifyRequester: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestRunIdentities: without a signature ("none") spec.requestedBy is trusted as
// stored; with one, an unsealed requester is unknown.
func TestRunIdentities(t *testing.T) {
	signer, _ := signers(t)
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "ns"},
		Spec: exagentv1.AgentRunSpec{RequestedBy: &exagentv1.Actor{Username: "dave"}}}
	if ids := authz.RunIdentities(run, authz.WithManager("mgr", "")); ids.Namespace != "ns" || ids.RequesterUnverified != "" ||
		!cmp.Equal(ids.Manager, []string{"mgr"}) {
		t.Errorf("no signature: %+v", ids)
	}
	if ids := authz.RunIdentities(run, authz.WithSigner(signer)); ids.RequesterUnverified == "" {
		t.Errorf("with a signature, an unsealed requester must be unverified: %+v", ids)
	}
	if err := signer.SignRequester(run); err != nil {
		t.Fatal(err)
	}
	if ids := authz.RunIdentities(run, authz.WithSigner(signer)); ids.RequesterUnverified != "" {
		t.Errorf("a sealed requester: %+v", ids)
	}
}

func TestNewSignerNeedsAKey(t *testing.T) {
	if _, err := authz.NewSigner(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}
