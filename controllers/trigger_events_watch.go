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
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The bounds of one watch's reads.
const (
	// eventListPage and eventListPages bound the listing a watch starts
	// with (and re-lists after 410 Gone): the Events since its cutoff are
	// taken from at most this many, so a namespace of a million Events is
	// not read whole into memory. Past them, older Events are skipped.
	eventListPage  = 100
	eventListPages = 20
	// eventWatchSeconds is how long the apiserver holds one watch; it is
	// renewed from the last resourceVersion.
	eventWatchSeconds = 10 * 60
)

// errEventsGone: the watch's resourceVersion is too old (410): list again.
var errEventsGone = errors.New("the Events' resourceVersion is gone")

// nsWatch watches the Events of one namespace for one trigger, as its
// ServiceAccount.
type nsWatch struct {
	s        *EventSources
	key      types.NamespacedName
	et       *eventTrigger
	ns       string
	events   corev1client.EventInterface
	filter   eventFilter
	selector string
	// cutoff: a listed Event that last happened before it is old.
	cutoff time.Time
	log    logr.Logger
}

// newWatchBackoff is the backoff of a failing watch: 1s doubling to 5
// minutes, jittered so that a restarted apiserver is not met by every
// watch at once.
func newWatchBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 32, Cap: 5 * time.Minute}
}

// run lists (taking the Events since the cutoff) and watches from the
// list's resourceVersion until ctx ends: a watch the apiserver ends is
// renewed from the last resourceVersion seen, a 410 lists again, and an
// error (the ServiceAccount's rights revoked, the apiserver away) is
// recorded as the trigger's problem and retried with backoff.
func (w *nsWatch) run(ctx context.Context) {
	w.s.watchStarted(w.et, 1)
	defer w.s.watchStarted(w.et, -1)
	backoff := newWatchBackoff()
	rv := ""
	for ctx.Err() == nil {
		var err error
		if rv == "" {
			rv, err = w.list(ctx)
		}
		if err == nil {
			rv, err = w.watch(ctx, rv)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			w.s.watchProblem(w.key, w.et, w.ns, "")
			backoff = newWatchBackoff()
			continue
		case errors.Is(err, errEventsGone):
			w.log.V(1).Info("the Events' resourceVersion is gone: listing again")
			rv = ""
			continue
		}
		w.log.Error(err, "watching Kubernetes Events")
		w.s.watchProblem(w.key, w.et, w.ns, err.Error())
		if backoff.Steps <= 1 {
			backoff.Steps = 2 // stay at the cap
		}
		select {
		case <-ctx.Done():
			return
		case <-w.s.clock().After(backoff.Step()):
		}
	}
}

// list reads the Events of the namespace (a page at a time, bounded),
// hands on those since the cutoff, and answers the resourceVersion to
// watch from.
func (w *nsWatch) list(ctx context.Context) (string, error) {
	opts := metav1.ListOptions{FieldSelector: w.selector, Limit: eventListPage}
	rv := ""
	for page := 0; page < eventListPages; page++ {
		l, err := w.events.List(ctx, opts)
		if err != nil {
			return "", fmt.Errorf("listing events in namespace %s: %w", w.ns, err)
		}
		if rv == "" {
			rv = l.ResourceVersion // every page is of the first one's snapshot
		}
		for i := range l.Items {
			if !eventTime(&l.Items[i]).Before(w.cutoff) {
				w.offer(&l.Items[i])
			}
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return rv, nil
		}
	}
	w.log.Info("more Events than a watch lists: the older ones are skipped", "listed", eventListPage*eventListPages)
	return rv, nil
}

// watch watches from rv until the apiserver ends the watch (nil), the
// resourceVersion is gone (errEventsGone) or an error; it answers the
// last resourceVersion seen.
func (w *nsWatch) watch(ctx context.Context, rv string) (string, error) {
	timeout := int64(eventWatchSeconds)
	wi, err := w.events.Watch(ctx, metav1.ListOptions{FieldSelector: w.selector, ResourceVersion: rv,
		AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return rv, errEventsGone
		}
		return rv, fmt.Errorf("watching events in namespace %s: %w", w.ns, err)
	}
	defer wi.Stop()
	w.s.watchProblem(w.key, w.et, w.ns, "")
	for {
		select {
		case <-ctx.Done():
			return rv, nil
		case e, ok := <-wi.ResultChan():
			if !ok {
				return rv, nil
			}
			switch e.Type {
			case watch.Error:
				err := apierrors.FromObject(e.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return rv, errEventsGone
				}
				return rv, fmt.Errorf("watching events in namespace %s: %w", w.ns, err)
			case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
				ev, ok := e.Object.(*corev1.Event)
				if !ok {
					continue
				}
				rv = ev.ResourceVersion
				// Modified too: a repeated Event is the same object, its
				// count and lastTimestamp raised (a pod's BackOff).
				if e.Type == watch.Added || e.Type == watch.Modified {
					w.offer(ev)
				}
			}
		}
	}
}

// offer hands a matching Event to the trigger's delivery.
func (w *nsWatch) offer(ev *corev1.Event) {
	if !w.filter.matches(ev) {
		return
	}
	w.s.handOn(w.key, w.et, triggerEvent(ev), eventTime(ev))
}

// watchStarted counts a watch of et starting (+1) or ending (-1).
func (s *EventSources) watchStarted(et *eventTrigger, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	et.live += n
	s.live += n
}

// watchProblem records why et's watch of ns fails ("": it does not), and
// tells Changed when that changed.
func (s *EventSources) watchProblem(key types.NamespacedName, et *eventTrigger, ns, problem string) {
	s.mu.Lock()
	if et.failing == nil {
		et.failing = map[string]string{}
	}
	was := et.failing[ns]
	if problem == "" {
		delete(et.failing, ns)
	} else {
		et.failing[ns] = problem
	}
	s.mu.Unlock()
	if was != problem {
		s.changed(key)
	}
}
