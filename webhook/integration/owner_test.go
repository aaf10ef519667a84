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
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// ownedBy reports whether d has an ownerReference to run name of uid.
func ownedBy(d *exagentv1.ApprovalDecision, name string, uid types.UID) bool {
	return slices.ContainsFunc(d.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.APIVersion == exagentv1.GroupVersion.String() && o.Kind == "AgentRun" && o.Name == name && o.UID == uid &&
			o.Controller == nil && o.BlockOwnerDeletion == nil
	})
}

// TestDecisionGetsItsRunAsOwner: with the real webhooks in the path, the
// decision controller gives each decision an ownerReference to its run (a
// cluster's garbage collector then deletes it with the run): a metadata
// patch the validating webhook lets through, while the spec stays
// immutable. A decision signed for an earlier run of the same name is
// owned by that run, never by the one that holds the name now.
func TestDecisionGetsItsRunAsOwner(t *testing.T) {
	s := newScenario(t)
	d := approve(s.ns, "alice-approves", runPayments)
	if err := as(t, "alice").Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	old := approve(s.ns, "alice-approves-billing", runBilling)
	if err := as(t, "alice").Create(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	payments := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	first := get(t, s.ns, runBilling, &exagentv1.AgentRun{})
	if err := admin.Delete(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first billing run is gone", func() bool {
		return apierrors.IsNotFound(admin.Get(t.Context(), client.ObjectKeyFromObject(first), &exagentv1.AgentRun{}))
	})
	second := createPausedRun(t, as(t, "dave"), s.ns, runBilling, "billing", false)

	startDecisionController(t, s.ns)
	waitForResult(t, d)
	eventually(t, "the decision is owned by its run", func() bool {
		return ownedBy(get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{}), runPayments, payments.UID)
	})
	if got := waitForResult(t, old); got.Status.Phase != exagentv1.DecisionRejected {
		t.Fatalf("the earlier run's decision = %s, want Rejected", got.Status.Phase)
	}
	eventually(t, "the earlier run's decision is owned by the earlier run", func() bool {
		return ownedBy(get(t, s.ns, old.Name, &exagentv1.ApprovalDecision{}), runBilling, first.UID)
	})
	if ownedBy(get(t, s.ns, old.Name, &exagentv1.ApprovalDecision{}), runBilling, second.UID) {
		t.Error("the earlier run's decision is owned by the run re-created under its name")
	}

	owned := get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{})
	owned.Spec.Reason = "rewritten after the owner was set"
	if err := admin.Update(t.Context(), owned); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("update of an owned decision's spec: got %v, want Invalid: spec is immutable", err)
	}
}
