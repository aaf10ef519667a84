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
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/exagent-io/exagent/internal/waitcond"
)

// The shared watches of WaitFor calls (DESIGN §20): one informer per
// (resource, namespace, ServiceAccount), listing and watching as that
// ServiceAccount — never as the manager — shared by every Waiting run
// that waits on objects of that resource there as that identity, started
// by the first and stopped when the last stops waiting. An event on an
// object enqueues the runs that wait on it; their reconcile evaluates the
// condition on the informer's copy. Memory only: after a restart every
// Waiting run is reconciled (the controller's initial list) and registers
// its watches again from its journal.

// The bounds of the shared watches: a tenant's runs must not make the
// manager watch without end.
const (
	// maxObjectWatches is the most informers one manager runs.
	maxObjectWatches = 256
	// maxObjectWatchesPerNamespace is the most informers for the runs of
	// one namespace, so one tenant cannot take them all.
	maxObjectWatchesPerNamespace = 32
)

// watchKey names a shared informer.
type watchKey struct {
	gvr           schema.GroupVersionResource
	namespace, sa string
}

func (k watchKey) String() string {
	return fmt.Sprintf("%s in %s as %s", k.gvr.GroupResource(), k.namespace, k.sa)
}

// interest is what a run waits on through one watch: objects by name, or
// any object (a label selector: a label change may add or remove one).
type interest struct {
	names []string
	any   bool
}

// objectWatch is one shared informer and the runs that need it.
type objectWatch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	runs     map[types.NamespacedName]interest

	mu sync.Mutex
	// problem is the last error of its list or watch ("" once it lists
	// and watches again); forbidden when the ServiceAccount may not.
	problem   string
	forbidden bool
	// conds are the conditions of its runs, parsed once (a CEL program is
	// compiled once, not at every event of every run): at most maxConds.
	conds map[string]*waitcond.Condition
}

// maxConds bounds the parsed conditions one watch keeps; past it a
// condition is parsed at each look.
const maxConds = 256

// condition is src parsed, from the watch's memo when it is there.
func (w *objectWatch) condition(src string) (*waitcond.Condition, error) {
	w.mu.Lock()
	c, ok := w.conds[src]
	w.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := waitcond.Parse(src)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if len(w.conds) < maxConds {
		if w.conds == nil {
			w.conds = map[string]*waitcond.Condition{}
		}
		w.conds[src] = c
	}
	w.mu.Unlock()
	return c, nil
}

// state is the informer's last problem and whether the ServiceAccount was
// refused.
func (w *objectWatch) state() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.problem, w.forbidden
}

// objectWatches are this manager's shared watches.
type objectWatches struct {
	base *rest.Config
	// life ends every informer when the manager stops.
	life context.Context
	// enqueue reconciles a run (the controller's channel source).
	enqueue func(types.NamespacedName)
	log     logr.Logger

	mu      sync.Mutex
	watches map[watchKey]*objectWatch
	byRun   map[types.NamespacedName]map[watchKey]bool
}

func newObjectWatches(life context.Context, base *rest.Config, enqueue func(types.NamespacedName), log logr.Logger) *objectWatches {
	return &objectWatches{base: base, life: life, enqueue: enqueue, log: log,
		watches: map[watchKey]*objectWatch{}, byRun: map[types.NamespacedName]map[watchKey]bool{}}
}

// register makes want the watches run needs, with what it waits on
// through each: the run joins the watches it did not need yet (starting
// them when new) and leaves the others (stopping those nobody needs any
// more). A watch that cannot be started — a cap reached, a client that
// cannot be made — is answered by key with the reason, for the call to
// fail with it.
func (o *objectWatches) register(run types.NamespacedName, want map[watchKey]interest) map[watchKey]error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var refused map[watchKey]error
	held := map[watchKey]bool{}
	for k, in := range want {
		w, ok := o.watches[k]
		if !ok {
			var err error
			if w, err = o.start(k); err != nil {
				if refused == nil {
					refused = map[watchKey]error{}
				}
				refused[k] = err
				continue
			}
		}
		w.runs[run] = in
		held[k] = true
	}
	for k := range o.byRun[run] {
		if !held[k] {
			o.leave(run, k)
		}
	}
	if len(held) == 0 {
		delete(o.byRun, run)
	} else {
		o.byRun[run] = held
	}
	return refused
}

// release stops run's interest in every watch (it no longer waits, ended,
// or was deleted).
func (o *objectWatches) release(run types.NamespacedName) {
	if o == nil {
		return // a reconciler not set up with a manager watches nothing
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.byRun[run] {
		o.leave(run, k)
	}
	delete(o.byRun, run)
}

// leave removes run from watch k, stopping it when nobody needs it. Under o.mu.
func (o *objectWatches) leave(run types.NamespacedName, k watchKey) {
	w, ok := o.watches[k]
	if !ok {
		return
	}
	delete(w.runs, run)
	if len(w.runs) == 0 {
		w.cancel()
		delete(o.watches, k)
		o.log.V(1).Info("stopped a shared watch", "watch", k.String())
	}
}

// get answers the watch of k, nil when none runs.
func (o *objectWatches) get(k watchKey) *objectWatch {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watches[k]
}

// running reports whether the shared watch of k runs and has not been
// refused (a right the ServiceAccount lost shows as forbidden).
func (o *objectWatches) running(k watchKey) bool {
	w := o.get(k)
	if w == nil {
		return false
	}
	_, forbidden := w.state()
	return !forbidden
}

// start starts the informer of k, within the caps. Under o.mu.
func (o *objectWatches) start(k watchKey) (*objectWatch, error) {
	if len(o.watches) >= maxObjectWatches {
		return nil, fmt.Errorf("the manager already runs %d shared watches, its most: it cannot watch %s too; "+
			"try again later, or poll with a Get and Sleep", maxObjectWatches, k)
	}
	inNS := 0
	for other := range o.watches {
		if other.namespace == k.namespace {
			inNS++
		}
	}
	if inNS >= maxObjectWatchesPerNamespace {
		return nil, fmt.Errorf("the runs of namespace %s already have %d shared watches, the most one namespace may have: "+
			"it cannot watch %s too; wait on fewer kinds at once", k.namespace, maxObjectWatchesPerNamespace, k)
	}
	dc, err := impersonatedDynamic(o.base, k.namespace, k.sa)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(o.life)
	w := &objectWatch{cancel: cancel, runs: map[types.NamespacedName]interest{}}
	w.informer = dynamicinformer.NewFilteredDynamicInformer(dc, k.gvr, k.namespace, 0, cache.Indexers{}, nil).Informer()
	if err := w.informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { o.watchFailed(k, w, err) }); err != nil {
		cancel()
		return nil, fmt.Errorf("watching %s: %w", k, err)
	}
	onObject := func(obj any) { o.changed(w, obj) }
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onObject,
		UpdateFunc: func(_, obj any) { onObject(obj) },
		DeleteFunc: onObject,
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("watching %s: %w", k, err)
	}
	o.watches[k] = w
	o.log.V(1).Info("started a shared watch", "watch", k.String())
	go w.informer.RunWithContext(ctx)
	return w, nil
}

// watchFailed records a list or watch error of k; a refusal wakes every
// run that waits through it, so each is told at once (the
// ServiceAccount lost its right to read, or never had it).
func (o *objectWatches) watchFailed(k watchKey, w *objectWatch, err error) {
	forbidden := apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
	w.mu.Lock()
	w.problem, w.forbidden = err.Error(), forbidden
	w.mu.Unlock()
	o.log.V(1).Info("a shared watch failed", "watch", k.String(), "error", err.Error())
	if forbidden {
		for _, run := range o.runsOf(w, "", true) {
			o.enqueue(run)
		}
	}
}

// changed enqueues the runs that wait on obj.
func (o *objectWatches) changed(w *objectWatch, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	w.mu.Lock()
	if w.problem != "" {
		w.problem, w.forbidden = "", false // it lists and watches again
	}
	w.mu.Unlock()
	for _, run := range o.runsOf(w, u.GetName(), false) {
		o.enqueue(run)
	}
}

// runsOf are the runs of w that wait on an object named name (every run
// when all).
func (o *objectWatches) runsOf(w *objectWatch, name string, all bool) []types.NamespacedName {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []types.NamespacedName
	for run, in := range w.runs {
		if all || in.any || slices.Contains(in.names, name) {
			out = append(out, run)
		}
	}
	return out
}

// impersonatedDynamic is a dynamic client of base's apiserver
// impersonating the ServiceAccount namespace/sa: only the user — the
// apiserver adds its groups — as the Kubernetes Events watches do
// (eventsClient).
func impersonatedDynamic(base *rest.Config, namespace, sa string) (dynamic.Interface, error) {
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(namespace, sa)}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonating ServiceAccount %s/%s: %w", namespace, sa, err)
	}
	return dc, nil
}
