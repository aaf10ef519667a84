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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/pool"
)

// dependentsWorkers is how many deleted runs' segments and decisions are
// deleted at once. A tenant that deletes 5,000 runs at once must not make
// the shared manager send the apiserver 5,000 DeleteCollections at once
// (each one scans the namespace's segments); the garbage collector of a
// real cluster does the same work at its own pace.
const dependentsWorkers = 4

// deletedRun is a run the informer saw deleted, whose dependents are due.
type deletedRun struct {
	namespace, name string
	uid             types.UID
	// sealed: the run's status referenced segments (its transcript head).
	sealed bool
}

// dependents deletes what a deleted run leaves behind — its segments and
// its decisions — off the informer's goroutine, a few at a time, from a
// deduplicating queue. On a cluster the garbage collector does it too
// (their ownerReferences); the local control plane and envtest have none.
// A run whose status never referenced a segment costs no request for
// segments: the rare segment created in the window before its first
// reference (a crash between the Create and the commit) is deleted by the
// garbage collector, or by the start-up sweep where none runs.
type dependents struct {
	r     *AgentRunReconciler
	queue workqueue.TypedInterface[deletedRun]
}

func newDependents(r *AgentRunReconciler) *dependents {
	return &dependents{r: r, queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[deletedRun]{Name: r.Name + "-dependents"})}
}

// add queues run's dependents.
func (d *dependents) add(run *exagentv1.AgentRun) {
	d.queue.Add(deletedRun{namespace: run.Namespace, name: run.Name, uid: run.UID,
		sealed: run.Status.Transcript != nil && run.Status.Transcript.Segments > 0})
}

// NeedLeaderElection is false: every replica sees the delete, and a
// second delete finds nothing.
func (d *dependents) NeedLeaderElection() bool { return false }

// Start runs the workers until the manager stops.
func (d *dependents) Start(ctx context.Context) error {
	pool.Run(ctx, dependentsWorkers, d.queue.ShutDown, d.work)
	return nil
}

func (d *dependents) work(ctx context.Context) bool {
	item, shutdown := d.queue.Get()
	if shutdown {
		return false
	}
	defer d.queue.Done(item)
	log := logf.FromContext(ctx)
	if item.sealed && d.r.Segments != nil {
		if err := d.r.Segments.DeleteOf(ctx, item.namespace, item.uid); err != nil && ctx.Err() == nil {
			log.Error(err, "deleting the segments of a deleted run", "namespace", item.namespace, "uid", item.uid)
		}
	}
	gone := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: item.namespace, Name: item.name, UID: item.uid}}
	if err := deleteDecisionsOf(ctx, d.r.Client, gone); err != nil && ctx.Err() == nil {
		log.Error(err, "deleting the decisions of a deleted run", "namespace", item.namespace, "run", item.name, "uid", item.uid)
	}
	return true
}
