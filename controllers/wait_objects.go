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
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// WaitFor calls (DESIGN §20; loop/wait_object.go): while a run is Waiting
// with calls that wait on objects, each reconcile of it checks, as the
// run's ServiceAccount, that it may list and watch them (refused: the call
// fails at once, not at its timeout), keeps the run registered with the
// shared watch of their resource (wait_objects_watch.go), evaluates the
// condition on the watch's copy of the objects and hands what it saw to
// loop.ObserveWait. A change of a waited object enqueues the run.

const (
	// maxWaitedObjects is the most objects a label selector may select:
	// the condition is evaluated on each, at every change of one.
	maxWaitedObjects = 100
	// unsyncedRetry is how soon a run whose watch has not listed yet is
	// looked at again (a selector's answer needs the whole listing).
	unsyncedRetry = 500 * time.Millisecond
)

// objectWaitSource is the channel through which the shared watches
// enqueue runs.
func (r *AgentRunReconciler) objectWaitSource() source.Source {
	ch := make(chan event.GenericEvent, 1024)
	r.objectWaits = newObjectWatches(r.life, r.restConfig, func(k types.NamespacedName) {
		ev := event.GenericEvent{Object: &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace}}}
		select {
		case ch <- ev: // blocking: a dropped wake-up would leave the run waiting until its timeout
		case <-r.life.Done():
		}
	}, ctrl.Log.WithName(r.Name).WithName("waitfor"))
	return source.Channel(ch, &handler.EnqueueRequestForObject{})
}

// observeObjects applies what the shared watches see to a Waiting run's
// WaitFor calls; it stops the turn while the run still waits. A run that
// no longer waits leaves its watches.
func (r *AgentRunReconciler) observeObjects(ctx context.Context, sc *scope) error {
	if sc.status.Phase != exagentv1.PhaseWaiting {
		r.objectWaits.release(sc.key)
		return nil
	}
	defer func() {
		if sc.status.Phase == exagentv1.PhaseWaiting {
			sc.stop = true // the clock (nextWakeup) or a watch brings it back
		}
	}()
	type waited struct {
		call    string
		obj     exagentv1.WaitedObject
		key     watchKey
		problem string
	}
	var calls []waited
	want := map[watchKey]interest{}
	for i := range sc.status.Calls {
		c := &sc.status.Calls[i]
		if c.State != exagentv1.CallStarted || c.Wait == nil || c.Wait.Kind != exagentv1.WaitObject || c.Wait.Object == nil {
			continue
		}
		wc := waited{call: c.ID, obj: *c.Wait.Object}
		wc.key, wc.problem = resolveWaited(r.mapper, sc.key.Namespace, &wc.obj)
		if wc.problem == "" && !r.objectWaits.running(wc.key) {
			// A running watch of the key proves the access it would check:
			// it lists and watches as this ServiceAccount, and reports a
			// right lost since (observe). Only a new one is reviewed first.
			denied, err := watchDenied(ctx, r.Client, wc.key)
			if err != nil {
				return fmt.Errorf("WaitFor call %s: %w", c.ID, err)
			}
			wc.problem = denied
		}
		if wc.problem == "" {
			in := want[wc.key]
			if wc.obj.Name == "" {
				in.any = true
			} else {
				if !slices.Contains(in.names, wc.obj.Name) {
					in.names = append(in.names, wc.obj.Name)
				}
			}
			want[wc.key] = in
		}
		calls = append(calls, wc)
	}
	refused := r.objectWaits.register(sc.key, want)
	status, changed := sc.status, false
	for _, wc := range calls {
		obs := loop.WaitObservation{Problem: wc.problem}
		if obs.Problem == "" {
			if err := refused[wc.key]; err != nil {
				obs.Problem = err.Error()
			} else {
				var synced bool
				obs, synced = r.observe(ctx, wc.key, &wc.obj)
				if !synced {
					sc.requeueAfter = unsyncedRetry
				}
			}
		}
		next, ok, err := loop.ObserveWait(status, sc.env, wc.call, obs, sc.now)
		if err != nil {
			return fmt.Errorf("observing WaitFor call %s: %w", wc.call, err)
		}
		if ok {
			status, changed = next, true
		}
	}
	if !changed {
		return nil
	}
	if store.IsSummary(sc.run) {
		return store.ErrSummary // computed again, at once, from the run read past the cache
	}
	sc.requeueAfter = 0
	sc.set(status)
	if status.Phase != exagentv1.PhaseWaiting {
		// The watch is left to the next turn (which releases it, the run
		// no longer Waiting): this turn's commit may still be refused — a
		// cached summary is computed again from the run read past the
		// cache — and the retry must find the watch with its objects, not
		// a new one that has listed nothing yet.
		sc.note(exagentv1.EventRunWoken, normal, "%s", status.Message)
	}
	return nil
}

// observe evaluates o's condition on the shared watch's copy of the
// object(s). synced is false while the watch has not listed yet: a named
// object it already holds is evaluated, a selector waits for the listing.
func (r *AgentRunReconciler) observe(ctx context.Context, k watchKey, o *exagentv1.WaitedObject) (obs loop.WaitObservation, synced bool) {
	w := r.objectWaits.get(k)
	if w == nil {
		return obs, false
	}
	if problem, forbidden := w.state(); forbidden {
		obs.Problem = fmt.Sprintf("forbidden: reading %s as ServiceAccount %s/%s: %s", k.gvr.GroupResource(), k.namespace, k.sa, clipText(problem, 512))
		return obs, true
	}
	cond, err := w.condition(o.Condition)
	if err != nil {
		obs.Problem = err.Error()
		return obs, true
	}
	synced = w.informer.HasSynced()
	if o.Name != "" {
		item, exists, err := w.informer.GetStore().GetByKey(k.namespace + "/" + o.Name)
		if err != nil || !exists {
			return obs, synced // absent: it may be created; the timeout ends the wait
		}
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			return obs, synced
		}
		met, err := cond.Met(ctx, u)
		switch {
		case err != nil:
			obs.Problem = err.Error()
		case met:
			obs.Met, obs.Detail = true, fmt.Sprintf("%s %s/%s", o.Kind, k.namespace, o.Name)
		}
		return obs, synced
	}
	if !synced {
		return obs, false
	}
	sel, err := labels.Parse(o.LabelSelector)
	if err != nil {
		obs.Problem = fmt.Sprintf("labelSelector %q does not parse: %v", o.LabelSelector, err)
		return obs, true
	}
	var selected []*unstructured.Unstructured
	for _, item := range w.informer.GetStore().List() {
		u, ok := item.(*unstructured.Unstructured)
		if !ok || !sel.Matches(labels.Set(u.GetLabels())) {
			continue
		}
		if len(selected) == maxWaitedObjects {
			obs.Problem = fmt.Sprintf("labelSelector %q selects more than %d %s objects, the most WaitFor evaluates: narrow it",
				o.LabelSelector, maxWaitedObjects, o.Kind)
			return obs, true
		}
		selected = append(selected, u)
	}
	if len(selected) == 0 {
		return obs, true // none yet: at least one must exist
	}
	names := make([]string, 0, len(selected))
	for _, u := range selected {
		met, err := cond.Met(ctx, u)
		if err != nil {
			obs.Problem = err.Error()
			return obs, true
		}
		if !met {
			return obs, true
		}
		names = append(names, u.GetName())
	}
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
	}
	obs.Met = true
	obs.Detail = fmt.Sprintf("%d %s in %s with labels %s: %s", len(selected), o.Kind, k.namespace, o.LabelSelector, strings.Join(names, ", "))
	return obs, true
}

// clipText cuts s to at most n bytes, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
