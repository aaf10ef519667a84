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

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// TestLoadSigner: every replica loads the same key — the first one creates
// the Secret, the others read it — so a decision signing keyed by one replica's
// webhook verifies in another replica's controller.
func TestLoadSigner(t *testing.T) {
	ref := types.NamespacedName{Namespace: managerNamespace, Name: authz.DefaultSigningSecretName}
	again, err := authz.LoadSigner(t.Context(), admin, admin, ref)
	if err != nil {
		t.Fatal(err)
	}
	s := newScenario(t)
	d := approve(s.ns, "alice-approves", runPayments)
	if err := as(t, "alice").Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	stored := get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{})
	if stored.Annotations[authz.SignatureAnnotation] == "" {
		t.Fatalf("admitted decision carries no %s annotation", authz.SignatureAnnotation)
	}
	if err := again.Verify(stored, get(t, s.ns, runPayments, &exagentv1.AgentRun{})); err != nil {
		t.Errorf("a second load of the key does not verify the webhook's signature: %v", err)
	}
}

// TestSignatureWithGenerateName: admission runs before the apiserver generates a
// name, so the signature and the operationID default must not depend on it. A
// decision created with metadata.generateName is admitted, gets an
// operationID of its own and verifies in the controller.
func TestSignatureWithGenerateName(t *testing.T) {
	ref := types.NamespacedName{Namespace: managerNamespace, Name: authz.DefaultSigningSecretName}
	signer, err := authz.LoadSigner(t.Context(), admin, admin, ref)
	if err != nil {
		t.Fatal(err)
	}
	s := newScenario(t)
	var ops []string
	for range 2 {
		d := approve(s.ns, "", runPayments)
		d.GenerateName = "alice-"
		if err := as(t, "alice").Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		stored := get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{})
		if err := signer.Verify(stored, get(t, s.ns, runPayments, &exagentv1.AgentRun{})); err != nil {
			t.Errorf("decision %s created with generateName does not verify: %v", stored.Name, err)
		}
		if stored.Spec.OperationID == "" || stored.Spec.OperationID == "alice-" {
			t.Errorf("operationID = %q, want one unique to the create request", stored.Spec.OperationID)
		}
		ops = append(ops, stored.Spec.OperationID)
	}
	if ops[0] == ops[1] {
		t.Errorf("two generateName decisions share operationID %q", ops[0])
	}
}
