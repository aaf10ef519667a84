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

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/authz"
)

// +kubebuilder:rbac:groups=exagent.io,resources=approvaldecisions,verbs=patch;delete

// A decision belongs to its run: the decision controller gives it an
// ownerReference to the run once it has read the run (a cluster's garbage
// collector then deletes it with the run), and retention deletes a run's
// decisions itself before the run, for the clusters that have no garbage
// collector (envtest, the devcluster).

// indexRunRef indexes ApprovalDecisions by spec.runRef.name, so the
// decisions of a run are listed from the cache.
const indexRunRef = "spec.runRef.name"

func indexDecisions(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &exagentv1.ApprovalDecision{}, indexRunRef, func(o client.Object) []string {
		return []string{o.(*exagentv1.ApprovalDecision).Spec.RunRef.Name}
	}); err != nil {
		return fmt.Errorf("indexing ApprovalDecisions by runRef: %w", err)
	}
	return nil
}

// runOf is the UID of the run d belongs to: its ownerReference's, else the
// run the admission webhook sealed it for; empty when d records neither.
func runOf(d *exagentv1.ApprovalDecision) types.UID {
	for _, ref := range d.OwnerReferences {
		if ref.Kind == "AgentRun" && ref.APIVersion == exagentv1.GroupVersion.String() {
			return ref.UID
		}
	}
	return types.UID(d.Annotations[authz.RunUIDAnnotation])
}

// belongsTo reports whether d is a decision of run: it names the run, and
// the run it records (owner or sealed UID) is this one — a decision that
// records none was made for this name, which one run holds at a time.
func belongsTo(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) bool {
	if d.Namespace != run.Namespace || d.Spec.RunRef.Name != run.Name {
		return false
	}
	uid := runOf(d)
	return uid == "" || uid == run.UID
}

// decisionsOf lists the decisions of run from the cache, in creation order.
func decisionsOf(ctx context.Context, c client.Reader, run *exagentv1.AgentRun) ([]exagentv1.ApprovalDecision, error) {
	var list exagentv1.ApprovalDecisionList
	if err := c.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingFields{indexRunRef: run.Name}); err != nil {
		return nil, fmt.Errorf("listing the decisions of run %s/%s: %w", run.Namespace, run.Name, err)
	}
	out := list.Items[:0]
	for i := range list.Items {
		if belongsTo(&list.Items[i], run) {
			out = append(out, list.Items[i])
		}
	}
	sortByCreation(out)
	return out, nil
}

func sortByCreation(ds []exagentv1.ApprovalDecision) {
	slices.SortFunc(ds, func(a, b exagentv1.ApprovalDecision) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// deleteDecisionsOf deletes the decisions of run (each by its UID, so a
// decision re-created meanwhile is not touched). Idempotent: one already
// gone is success.
func deleteDecisionsOf(ctx context.Context, c client.Client, run *exagentv1.AgentRun) error {
	ds, err := decisionsOf(ctx, c, run)
	if err != nil {
		return err
	}
	var errs []error
	for i := range ds {
		d := &ds[i]
		if err := c.Delete(ctx, d, client.Preconditions{UID: &d.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting decision %s of run %s/%s: %w", d.Name, run.Namespace, run.Name, err))
		}
	}
	return errors.Join(errs...)
}

// ownDecision gives d an ownerReference to the run it belongs to: the run
// the webhook sealed it for when it records one (a run since deleted and
// re-created under the same name is not its owner; the garbage collector
// removes a decision whose owner is gone), else run. Not a controller
// reference, and no blockOwnerDeletion: the decision is its author's
// object, and deleting the run must not wait for it. Only metadata
// changes, which the validating webhook lets through without a call
// (its matchCondition skips updates that leave spec as it was); the
// patch carries d's resourceVersion, so it never overwrites another
// writer's ownerReferences.
func ownDecision(ctx context.Context, c client.Client, d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) error {
	if runOfOwner(d) || run == nil || run.Namespace != d.Namespace || run.Name != d.Spec.RunRef.Name {
		return nil
	}
	uid := run.UID
	if sealed := types.UID(d.Annotations[authz.RunUIDAnnotation]); sealed != "" {
		uid = sealed
	}
	patched := d.DeepCopy()
	patched.OwnerReferences = append(patched.OwnerReferences, metav1.OwnerReference{
		APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentRun", Name: run.Name, UID: uid,
	})
	if err := c.Patch(ctx, patched, client.MergeFromWithOptions(d, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting the owner of decision %s to run %s: %w", d.Name, run.Name, err)
	}
	return nil
}

// runOfOwner reports whether d has an ownerReference to a run.
func runOfOwner(d *exagentv1.ApprovalDecision) bool {
	for _, ref := range d.OwnerReferences {
		if ref.Kind == "AgentRun" && ref.APIVersion == exagentv1.GroupVersion.String() {
			return true
		}
	}
	return false
}

// ownerOnly reports whether a decision's update only gave it its run as
// owner: nothing its run needs to look at again.
func ownerOnly(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*exagentv1.ApprovalDecision)
	cur, ok2 := e.ObjectNew.(*exagentv1.ApprovalDecision)
	return ok1 && ok2 && !runOfOwner(old) && runOfOwner(cur) &&
		equality.Semantic.DeepEqual(old.Spec, cur.Spec) && equality.Semantic.DeepEqual(old.Status, cur.Status)
}
