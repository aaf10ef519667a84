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
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/triggers"
)

// MaxEventWatches bounds the watches of Kubernetes Events one manager
// holds: one per AgentTrigger and namespace it reads, each an open
// request to the apiserver whose number the triggers' authors choose.
// Past it, a trigger that needs more is not watched, and its Problems
// say so. Not a flag: a cluster that needs more wants fewer, wider
// triggers, not a bigger manager.
const MaxEventWatches = 256

// The bounds of one trigger's Kubernetes Events (docs/triggers.md).
const (
	// eventsPerSecond (burst eventsBurst) is how many matching Events a
	// trigger hands to its expressions; the rest are dropped and counted,
	// so a namespace whose author floods it with Events costs CEL and
	// apiserver writes at a fixed rate.
	eventsPerSecond = 10
	eventsBurst     = 50
	// maxPendingEvents bounds the Events waiting for a trigger's
	// delivery (one at a time, retried while the apiserver is away).
	maxPendingEvents = 64
	// startGrace is how far before its watch starts a trigger that has
	// never received an event reads Events (those a restart of the
	// manager would otherwise miss), never before the trigger existed.
	startGrace = 2 * time.Minute
	// recheckProblems is when a trigger that cannot watch every
	// namespace first asks again (its ServiceAccount may have been
	// granted since), doubling up to maxRecheck.
	recheckProblems = time.Minute
	maxRecheck      = 15 * time.Minute
)

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// EventSources watches the Kubernetes Events of each AgentTrigger whose
// source is kubernetesEvents, as the trigger's ServiceAccount (the
// manager impersonates it, and needs no right on events itself), and
// hands each matching Event to Handler.Deliver: the trigger's dedup
// window, rate and run names then apply as to a webhook delivery.
//
// It is a leader-elected manager Runnable: one replica watches each
// trigger, so Events are not counted or delivered twice; a new leader
// starts again, and the runs' names (trigger, key, window) make what it
// delivers a second time no second run.
type EventSources struct {
	// Cache is the manager's: AgentTriggers are read and watched there.
	Cache cache.Cache
	// Client reads AgentTriggers (cached) and creates SubjectAccessReviews.
	Client client.Client
	// Config is the manager's; each trigger's watches impersonate its
	// ServiceAccount with a copy.
	Config *rest.Config
	// Lookup reads a trigger as Handler.Deliver takes it (TriggerRuns).
	Lookup triggers.Lookup
	// Handler deduplicates, rate-limits and makes the runs.
	Handler *triggers.Handler
	// Clock is the backoffs' and windows' (the real one when nil).
	Clock clock.WithTicker
	Log   logr.Logger
	// MaxWatches bounds the watches (MaxEventWatches when 0).
	MaxWatches int
	// Changed, when set, is told a trigger's Problems may have changed
	// (the Ready controller looks again); it must not block.
	Changed func(types.NamespacedName)
	// Owner says which triggers this manager watches for: each shard's
	// leader the triggers of its shard (the zero value: all).
	Owner Ownership

	mu       sync.Mutex
	root     context.Context
	active   map[types.NamespacedName]*eventTrigger
	reserved int // watches the active triggers may hold
	live     int // watches running now
	stats    map[types.NamespacedName]*EventSourceStats
}

// EventSourceStats are what became of a trigger's Events before and
// around delivery, since this manager started watching it (the trigger's
// status counts what Deliver made of the rest).
type EventSourceStats struct {
	// Dropped: past eventsPerSecond, or with maxPendingEvents waiting, or
	// still failing (5xx) after every retry.
	Dropped int64
	// Rejected: the trigger's expressions failed over the Event (4xx).
	Rejected int64
}

// eventTrigger is one generation of a trigger being watched.
type eventTrigger struct {
	uid        types.UID
	generation int64
	// checked is when its namespaces' rights were last reviewed.
	checked time.Time
	// watched are the namespaces it watches; problems why it watches no
	// other of its namespaces (by namespace, "" for the whole trigger),
	// written by sync only; failing why a watch of a watched namespace
	// fails now, written by the watch. Both under EventSources.mu.
	watched           []string
	problems, failing map[string]string
	// slots are the watches it holds of MaxWatches; live those running.
	slots, live int
	// last is the newest Event time handed on: a restart of the trigger
	// in this process reads from there.
	last    time.Time
	limiter flowcontrol.PassiveRateLimiter
	queue   chan triggers.Event
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

var _ manager.LeaderElectionRunnable = &EventSources{}

// NeedLeaderElection is true: one watcher per trigger in the cluster.
func (s *EventSources) NeedLeaderElection() bool { return true }

// Start watches the triggers until ctx ends, then stops every watch.
func (s *EventSources) Start(ctx context.Context) error {
	s.mu.Lock()
	s.root = ctx
	s.mu.Unlock()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Clock: s.clock()})
	// A trigger that may not read some namespace asks again, ever less
	// often: its SubjectAccessReviews are the apiserver's work, and its
	// author chose them.
	rechecks := workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](recheckProblems, maxRecheck)
	defer s.stopAll()
	inf, err := s.Cache.GetInformer(ctx, &exagentv1.AgentTrigger{})
	if err != nil {
		return fmt.Errorf("watching AgentTriggers for their Kubernetes Events: %w", err)
	}
	enqueue := func(obj any) {
		k, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		ns, name, err := toolscache.SplitMetaNamespaceKey(k)
		if err == nil {
			q.Add(types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	})
	if err != nil {
		return fmt.Errorf("watching AgentTriggers for their Kubernetes Events: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	if !s.Cache.WaitForCacheSync(ctx) {
		return nil // ctx ended first
	}
	for {
		key, shutdown := q.Get()
		if shutdown {
			return nil
		}
		res, err := s.sync(ctx, key)
		s.changed(key)
		switch {
		case err != nil && ctx.Err() == nil:
			s.Log.Error(err, "starting a trigger's Kubernetes Event watches", "trigger", key)
			q.AddRateLimited(key)
		case res == recheck:
			q.Forget(key)
			q.AddAfter(key, rechecks.When(key))
		case res == notOwned:
			q.Forget(key)
			q.AddAfter(key, ownershipRecheck)
		case res == done:
			q.Forget(key)
			rechecks.Forget(key)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}

// sync makes key's watches what its AgentTrigger asks for: none when it
// is gone or reads no Events, a fresh set for a new generation, and
// every recheckProblems a new review of the namespaces it may not read.
func (s *EventSources) sync(ctx context.Context, key types.NamespacedName) (synced, error) {
	at := &exagentv1.AgentTrigger{}
	if err := s.Client.Get(ctx, key, at); err != nil {
		if apierrors.IsNotFound(err) {
			s.stop(key, true)
			return done, nil
		}
		return done, fmt.Errorf("reading AgentTrigger %s: %w", key, err)
	}
	if at.Spec.Source == nil || at.Spec.Source.KubernetesEvents == nil || at.DeletionTimestamp != nil {
		s.stop(key, true)
		return done, nil
	}
	if owns, err := s.Owner.ownsTrigger(ctx, key); err != nil || !owns {
		// Another shard's leader watches for it.
		s.stop(key, true)
		if err != nil {
			return done, err
		}
		return notOwned, nil
	}
	now := s.clock().Now()
	s.mu.Lock()
	cur := s.active[key]
	same := cur != nil && cur.uid == at.UID && cur.generation == at.Generation
	if same && (len(cur.problems) == 0 || now.Sub(cur.checked) < recheckProblems) {
		s.mu.Unlock()
		if len(cur.problems) == 0 {
			return done, nil
		}
		return pending, nil // its recheck is queued
	}
	s.mu.Unlock()

	watched, problems, err := s.review(ctx, at)
	if err != nil {
		return done, err
	}
	if len(problems) > 0 && (cur == nil || !maps.Equal(problems, cur.problems)) {
		s.Log.Info("not watching all of a trigger's Kubernetes Events", "trigger", key, "problems", problems)
	}
	if same && slices.Equal(watched, cur.watched) {
		// A recheck that changes nothing keeps the watches running.
		s.mu.Lock()
		cur.problems, cur.checked = problems, now
		s.mu.Unlock()
		return recheckIf(problems), nil
	}
	var last time.Time
	if cur != nil && cur.uid == at.UID {
		last = cur.last
	}
	s.stop(key, false)
	et := &eventTrigger{uid: at.UID, generation: at.Generation, checked: now, problems: problems,
		limiter: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(eventsPerSecond, eventsBurst, s.clock()),
		queue:   make(chan triggers.Event, maxPendingEvents), last: last}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil || s.root.Err() != nil {
		return done, nil // stopping
	}
	if s.active == nil {
		s.active = map[types.NamespacedName]*eventTrigger{}
	}
	s.active[key] = et
	if len(watched) == 0 {
		return recheckIf(problems), nil
	}
	if s.reserved+len(watched) > s.maxWatches() {
		et.problems[""] = fmt.Sprintf("this manager holds %d of its at most %d Kubernetes Event watches; the trigger needs %d more (one per namespace)",
			s.reserved, s.maxWatches(), len(watched))
		return recheckIf(et.problems), nil
	}
	s.reserved += len(watched)
	et.slots, et.watched = len(watched), watched
	src := at.Spec.Source.KubernetesEvents
	events, err := eventsClient(s.Config, at.Namespace, src.ServiceAccountName)
	if err != nil {
		s.reserved -= et.slots
		et.slots, et.watched = 0, nil
		return done, err
	}
	wctx, cancel := context.WithCancel(s.root)
	et.cancel = cancel
	cutoff := startCutoff(at, last, now)
	filter := newEventFilter(src)
	log := s.Log.WithValues("trigger", key, "serviceAccount", src.ServiceAccountName)
	et.wg.Add(1 + len(watched))
	go func() {
		defer et.wg.Done()
		s.deliverLoop(wctx, key, et, log)
	}()
	for _, ns := range watched {
		w := &nsWatch{s: s, key: key, et: et, ns: ns, events: events.Events(ns), filter: filter,
			selector: filter.fieldSelector(), cutoff: cutoff, log: log.WithValues("namespace", ns)}
		go func() {
			defer et.wg.Done()
			w.run(wctx)
		}()
	}
	log.Info("watching Kubernetes Events", "namespaces", watched, "fieldSelector", filter.fieldSelector(), "since", cutoff)
	return recheckIf(et.problems), nil
}

// synced is what became of a trigger's sync.
type synced int

const (
	// done: its watches are what it asks for.
	done synced = iota
	// recheck: some namespace is not watched; review it again later.
	recheck
	// pending: a recheck is queued already.
	pending
	// notOwned: another shard watches for it; look again later.
	notOwned
)

// recheckIf is recheck when there are problems.
func recheckIf(problems map[string]string) synced {
	if len(problems) == 0 {
		return done
	}
	return recheck
}

// startCutoff is the time before which a starting watch takes an Event
// it lists for old. Events that happened while no manager watched (a
// restart, a leader change) should still make runs, and Events from
// before the trigger never: so the trigger's last event time (its
// status, or this process's memory of it) when it has one — what came
// after was not received — else the watch's start less startGrace (the
// time a restart takes; a longer gap loses Events rather than replaying
// hours of them), and never before the trigger's creation. What is
// taken twice makes no second run: the dedup window and the runs' names
// see to that.
func startCutoff(at *exagentv1.AgentTrigger, last, now time.Time) time.Time {
	base := now.Add(-startGrace)
	if lt := at.Status.LastEventTime; lt != nil {
		base = lt.Time
	}
	if last.After(base) {
		base = last
	}
	if c := at.CreationTimestamp.Time; c.After(base) {
		return c
	}
	return base
}

// review asks which of the trigger's namespaces its ServiceAccount may
// list and watch events in; the others are problems.
func (s *EventSources) review(ctx context.Context, at *exagentv1.AgentTrigger) ([]string, map[string]string, error) {
	problems := map[string]string{}
	// An expression that does not compile makes no run of any Event:
	// nothing to watch for.
	if _, err := s.Lookup.Trigger(ctx, client.ObjectKeyFromObject(at)); err != nil {
		if errors.Is(err, triggers.ErrNotFound) {
			return nil, problems, nil
		}
		problems[""] = err.Error()
		return nil, problems, nil
	}
	src := at.Spec.Source.KubernetesEvents
	namespaces := []string{at.Namespace}
	if o := src.InvolvedObject; o != nil && len(o.Namespaces) > 0 {
		namespaces = slices.Clone(o.Namespaces)
	}
	sort.Strings(namespaces)
	namespaces = slices.Compact(namespaces)
	var watched []string
	for _, ns := range namespaces {
		verbs, err := eventsDenied(ctx, s.Client, at.Namespace, src.ServiceAccountName, ns)
		if err != nil {
			return nil, nil, err
		}
		if verbs != "" {
			problems[ns] = fmt.Sprintf("ServiceAccount %s/%s may not %s events in namespace %s (grant it list and watch on events, API group \"\")",
				at.Namespace, src.ServiceAccountName, verbs, ns)
			continue
		}
		watched = append(watched, ns)
	}
	return watched, problems, nil
}

// stop ends key's watches and waits for them; forget drops what is
// remembered of it too (it is gone, or reads no Events).
func (s *EventSources) stop(key types.NamespacedName, forget bool) {
	s.mu.Lock()
	et := s.active[key]
	if et != nil {
		s.reserved -= et.slots
		et.slots = 0
		if forget {
			delete(s.active, key)
			delete(s.stats, key)
		}
	}
	s.mu.Unlock()
	if et == nil {
		return
	}
	if et.cancel != nil {
		et.cancel()
	}
	et.wg.Wait()
	if forget {
		s.Log.V(1).Info("stopped watching Kubernetes Events", "trigger", key)
	}
}

// stopAll ends every watch (the manager stops, or lost its lead).
func (s *EventSources) stopAll() {
	s.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(s.active))
	for k := range s.active {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.stop(k, true)
	}
}

// changed tells Changed, when set, that key's problems may have changed.
func (s *EventSources) changed(key types.NamespacedName) {
	if s.Changed != nil {
		s.Changed(key)
	}
}

// Problems says why the trigger key reads no Kubernetes Events, or not
// from all of its namespaces: its ServiceAccount may not list or watch
// events in a namespace (named), the manager's watches are exhausted, an
// expression does not compile, or a running watch fails (the apiserver's
// answer). Empty when every namespace is watched, or the trigger is not
// known (yet) to this replica — only the leader watches. For the
// trigger's Ready condition.
func (s *EventSources) Problems(key types.NamespacedName) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	et := s.active[key]
	if et == nil {
		return nil
	}
	out := make([]string, 0, len(et.problems)+len(et.failing))
	for _, p := range et.problems {
		out = append(out, p)
	}
	for _, p := range et.failing {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Watches is how many watches of Kubernetes Events run now, for the
// trigger key or (the zero key) in all.
func (s *EventSources) Watches(key types.NamespacedName) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key == (types.NamespacedName{}) {
		return s.live
	}
	if et := s.active[key]; et != nil {
		return et.live
	}
	return 0
}

// Stats are what this manager dropped or rejected of key's Events.
func (s *EventSources) Stats(key types.NamespacedName) EventSourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stats[key]; st != nil {
		return *st
	}
	return EventSourceStats{}
}

// count adds to key's stats.
func (s *EventSources) count(key types.NamespacedName, add func(*EventSourceStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats == nil {
		s.stats = map[types.NamespacedName]*EventSourceStats{}
	}
	st := s.stats[key]
	if st == nil {
		st = &EventSourceStats{}
		s.stats[key] = st
	}
	add(st)
}

func (s *EventSources) maxWatches() int {
	if s.MaxWatches > 0 {
		return s.MaxWatches
	}
	return MaxEventWatches
}

func (s *EventSources) clock() clock.WithTicker {
	if s.Clock == nil {
		return clock.RealClock{}
	}
	return s.Clock
}
