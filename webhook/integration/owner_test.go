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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// ownedBy reports whether d has an ownerReference to run name of uid.
func ownedBy(d *exagentv1.ApprovalDecision, name string, uid types.UID) bool {
	return slices.ContainsFunc(d.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.APIVersion == exagentv1.GroupVersion.String() && o.Kind == "AgentRun" && o.Name == name && o.UID == uid &&
			o.Controller == nil && o.BlockOwnerDeletion == nil
	})
}

// TestDecisionGetsItsRunAsOwnerAtAdmission: with the real webhooks in the
// path and no controller running, the decision the apiserver stores — the
// Create's own answer — already has an ownerReference to its run (a
// cluster's garbage collector deletes it with the run): no second write per
// decision. An AgentRun owner its author wrote (another run's) is replaced
// by the run it names; an owner of another kind is the author's and kept. A
// decision made for an earlier run of the same name stays owned by that
// run, never by the one that holds the name now. The spec stays immutable.
func TestDecisionGetsItsRunAsOwnerAtAdmission(t *testing.T) {
	s := newScenario(t)
	payments := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	first := get(t, s.ns, runBilling, &exagentv1.AgentRun{})

	d := approve(s.ns, "alice-approves", runPayments)
	if err := as(t, "alice").Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if !ownedBy(d, runPayments, payments.UID) || len(d.OwnerReferences) != 1 {
		t.Fatalf("the created decision's owners are %+v, want only run %s (uid %s)", d.OwnerReferences, runPayments, payments.UID)
	}

	forged := approve(s.ns, "alice-approves-billing", runBilling)
	cm := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ticket-42", UID: "0b1e6c6e-1111-4c4c-9a9a-000000000042"}
	forged.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentRun", Name: runPayments, UID: payments.UID}, cm,
	}
	if err := as(t, "alice").Create(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	if !ownedBy(forged, runBilling, first.UID) || ownedBy(forged, runPayments, payments.UID) ||
		!slices.ContainsFunc(forged.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == cm.UID }) {
		t.Fatalf("owners %+v, want run %s (uid %s) in place of the run the author wrote, and the ConfigMap kept",
			forged.OwnerReferences, runBilling, first.UID)
	}

	if err := admin.Delete(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first billing run is gone", func() bool {
		return apierrors.IsNotFound(admin.Get(t.Context(), client.ObjectKeyFromObject(first), &exagentv1.AgentRun{}))
	})
	second := createPausedRun(t, as(t, "dave"), s.ns, runBilling, "billing", false)
	if old := get(t, s.ns, forged.Name, &exagentv1.ApprovalDecision{}); !ownedBy(old, runBilling, first.UID) || ownedBy(old, runBilling, second.UID) {
		t.Errorf("the earlier run's decision has owners %+v, want the earlier run (uid %s), not the one re-created under its name", old.OwnerReferences, first.UID)
	}

	owned := get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{})
	owned.Spec.Reason = "rewritten after the owner was set"
	if err := admin.Update(t.Context(), owned); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("update of an owned decision's spec: got %v, want Invalid: spec is immutable", err)
	}
}
