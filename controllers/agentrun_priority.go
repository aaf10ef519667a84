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

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// ownerPriority is the work-queue priority of a run this process owns:
// results to commit and leases to renew go ahead of runs nobody owns yet
// (docs/architecture.md §8: under load the work queue, not the lease, must give). A
// busy process then claims new runs only once its own are served.
const ownerPriority = 100

// ownerWork enqueues the runs whose IO finished (the executor's channel)
// at ownerPriority.
func ownerWork() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
			if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: new(ownerPriority)}, req)
				return
			}
			q.Add(req)
		},
	}
}

// claimWatcher keeps the claims current from the informer itself; it
// enqueues nothing (the For watch does).
func (r *AgentRunReconciler) claimWatcher() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if run, ok := e.ObjectNew.(*exagentv1.AgentRun); ok {
				r.mem.claims.observed(run)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.Object != nil {
				r.leftCache(e.Object) // deleted, or moved to another shard (agentrun_moved.go)
			}
		},
	}
}

// priority is the work-queue priority of the run's next turn: high while
// this process owns it after the reconcile, the default otherwise.
func (r *AgentRunReconciler) priority(sc *scope) *int {
	if c := sc.run.Status.Claim; c != nil && c.Holder == r.Holder && sc.run.Status.Phase == exagentv1.PhaseRunning {
		return new(ownerPriority)
	}
	if r.mem.inbox.tracks(sc.key) {
		return new(ownerPriority)
	}
	return new(0)
}
