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
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/shard"
)

// Ownership says which of the objects every shard caches — Agents,
// AgentBudgets, AgentSchedules, AgentTriggers, Conversations — this
// manager writes: each has exactly one owner shard, the one its runs are
// placed on (shard.Placer), so a schedule's owner sees all its runs and
// a budget's owner its whole namespace. An unsharded manager owns all.
type Ownership struct {
	Serving shard.Serving
	Placer  *shard.Placer
}

// Owns reports whether this manager owns the object of namespace placed
// by key.
func (o Ownership) Owns(ctx context.Context, namespace, key string) (bool, error) {
	if !o.Serving.Sharded() {
		return true, nil
	}
	if !o.Placer.Enabled() {
		// No list to place by: the manager of the unlabelled runs owns
		// what they use.
		return o.Serving.Name() == "", nil
	}
	p, err := o.Placer.Place(ctx, namespace, key)
	if err != nil {
		return false, fmt.Errorf("placing %s in %s: %w", key, namespace, err)
	}
	return o.Serving.Owns(p.Shard), nil
}

// ownershipRecheck is how often a manager looks again at an object it
// does not own: a Namespace's pin, an AgentBudget created or deleted, or
// a changed --shards may make it the owner, and no event of the object's
// own says so.
const ownershipRecheck = time.Minute

// ownedOnly reconciles through next only the objects this manager owns
// (key places them); the others are looked at again every
// ownershipRecheck.
func ownedOnly(o Ownership, key func(name string) string, next reconcile.Reconciler) reconcile.Reconciler {
	if !o.Serving.Sharded() {
		return next
	}
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		owns, err := o.Owns(ctx, req.Namespace, key(req.Name))
		if err != nil {
			return ctrl.Result{}, err
		}
		if !owns {
			return ctrl.Result{RequeueAfter: ownershipRecheck}, nil
		}
		return next.Reconcile(ctx, req)
	})
}

// ownsTrigger is EventSources.Owns for o.
func (o Ownership) ownsTrigger(ctx context.Context, key types.NamespacedName) (bool, error) {
	return o.Owns(ctx, key.Namespace, shard.TriggerKey(key.Name))
}

// budgetKey places an AgentBudget: any key does, since a namespace with a
// budget is held whole (shard.Placement.Whole).
func budgetKey(name string) string { return "AgentBudget/" + name }

// withShardOf is labels with parent's shard label added (a copy): a
// child is served by its tree's shard, and admission keeps what the
// manager copied.
func withShardOf(parent *exagentv1.AgentRun, labels map[string]string) map[string]string {
	v, ok := parent.Labels[exagentv1.LabelShard]
	if !ok {
		return labels
	}
	out := make(map[string]string, len(labels)+1)
	maps.Copy(out, labels)
	out[exagentv1.LabelShard] = v
	return out
}

// OwnsChore reports whether this manager's shard does the cluster-wide
// chore name (the storage migration, adopting runs no shard serves): one
// shard of --shards, the same for every manager that has the same list.
// An unsharded manager does them all; so does the manager of the
// unlabelled runs when no list is given.
func (o Ownership) OwnsChore(name string) bool {
	switch {
	case !o.Serving.Sharded():
		return true
	case !o.Placer.Enabled():
		return o.Serving.Name() == ""
	}
	return o.Placer.Shards.Assign("", "chore/"+name) == o.Serving.Name()
}
