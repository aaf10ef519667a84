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
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// A run leaves a shard's cache in two ways the informer reports alike
// (a delete): it was deleted, or it was relabelled to another shard (the
// rebalancer moved it, or the platform team did). A deleted run's jobs
// are cancelled at once. A moved run is handed over: the calls this
// process has in flight finish, their outcomes are committed and the run
// released in one fenced commit (releaseOne, as at a stop), so the new
// shard's manager claims it at once instead of waiting out the lease —
// and a tool call in flight is never cut off, so its effect is neither
// lost nor, under the fence, repeated. Whatever fails is left to the
// lease, as a crash would be.

// leaving are the runs that left this shard's cache and are being looked
// at: until then their memory (the inbox a hand-over commits) is kept.
type leaving struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]int
}

func (l *leaving) add(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[types.NamespacedName]int{}
	}
	l.runs[key]++
}

func (l *leaving) done(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs[key]--; l.runs[key] <= 0 {
		delete(l.runs, key)
	}
}

func (l *leaving) has(key types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[key] > 0
}

// leftCache handles the informer's delete of run obj.
func (r *AgentRunReconciler) leftCache(obj client.Object) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	uid := obj.GetUID()
	if !r.Shard.Sharded() {
		r.runGone(key, uid, obj)
		return
	}
	r.mem.leaving.add(key)
	go func() {
		defer r.mem.leaving.done(key)
		ctx := r.life
		log := logf.FromContext(ctx).WithValues("run", key, "holder", r.Holder)
		run := &exagentv1.AgentRun{}
		err := r.APIReader.Get(ctx, key, run)
		if err != nil || run.UID != uid || r.Shard.Serves(run.Labels) {
			if err != nil && !apierrors.IsNotFound(err) {
				log.Info("could not tell a moved run from a deleted one: its jobs are cancelled, the lease decides", "reason", err.Error())
			}
			if err == nil && run.UID == uid {
				return // back in this shard already: nothing left
			}
			r.runGone(key, uid, obj)
			return
		}
		log.Info("run moved to another shard: handing it over", "shard", run.Labels[exagentv1.LabelShard])
		if err := r.releaseOne(ctx, ctx, key); err != nil {
			log.Info("moved run not handed over; its lease will expire", "reason", err.Error())
		}
		r.mem.claims.gone(key, uid)
		if cached := (&exagentv1.AgentRun{}); apierrors.IsNotFound(r.Client.Get(ctx, key, cached)) {
			r.mem.forget(key, r.Clock.Now())
		}
	}()
}

// runGone cancels a deleted run's jobs.
func (r *AgentRunReconciler) runGone(key types.NamespacedName, uid types.UID, obj client.Object) {
	r.mem.claims.gone(key, uid)
	if run, ok := obj.(*exagentv1.AgentRun); ok {
		observeRunDeleted(run) // metrics: its segments go with it
	}
}
