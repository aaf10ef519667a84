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
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/exagent-io/exagent/triggers"
)

// maxDeliverAttempts bounds the tries of one Event whose delivery fails
// for a reason that may pass (5xx: the apiserver, a trigger changing).
const maxDeliverAttempts = 8

// handOn queues an Event of et for delivery: within the trigger's rate
// and while fewer than maxPendingEvents wait, else it is dropped and
// counted — never does a flood of Events block a watch or grow memory.
func (s *EventSources) handOn(key types.NamespacedName, et *eventTrigger, ev triggers.Event, at time.Time) {
	if !et.limiter.TryAccept() {
		s.count(key, func(st *EventSourceStats) { st.Dropped++ })
		s.recordDrop(key)
		return
	}
	select {
	case et.queue <- ev:
		s.mu.Lock()
		if at.After(et.last) {
			et.last = at
		}
		s.mu.Unlock()
	default:
		s.count(key, func(st *EventSourceStats) { st.Dropped++ })
		s.recordDrop(key)
	}
}

// recordDrop counts an Event dropped before delivery as the trigger's
// status and metric count one past its rate (the Recorder's
// rate_limited): a trigger's dropped count says what its Events lost,
// wherever they were dropped.
func (s *EventSources) recordDrop(key types.NamespacedName) {
	if s.Handler == nil || s.Handler.Recorder == nil {
		return
	}
	s.Handler.Recorder.Record(key, map[triggers.Outcome]int{triggers.OutcomeRateLimited: 1}, "", s.clock().Now())
}

// deliverLoop delivers et's Events one at a time until ctx ends.
func (s *EventSources) deliverLoop(ctx context.Context, key types.NamespacedName, et *eventTrigger, log logr.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-et.queue:
			s.deliver(ctx, key, ev, log)
		}
	}
}

// deliver hands one Event to Handler.Deliver: done on 2xx, counted as
// rejected on 4xx (the trigger's expressions fail over it: a retry would
// fail the same), retried with backoff on 5xx and dropped, counted,
// after maxDeliverAttempts.
func (s *EventSources) deliver(ctx context.Context, key types.NamespacedName, ev triggers.Event, log logr.Logger) {
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: maxDeliverAttempts, Cap: time.Minute}
	for attempt := 1; ; attempt++ {
		status, err := s.deliverOnce(ctx, key, ev)
		switch {
		case ctx.Err() != nil:
			return
		case status < http.StatusBadRequest:
			return
		case status < http.StatusInternalServerError:
			log.Info("an Event makes no run: the trigger's expressions fail over it", "key", ev.Key, "error", err.Error())
			s.count(key, func(st *EventSourceStats) { st.Rejected++ })
			return
		case attempt >= maxDeliverAttempts:
			log.Error(err, "dropping an Event whose delivery failed every retry", "key", ev.Key, "attempts", attempt)
			s.count(key, func(st *EventSourceStats) { st.Dropped++ })
			return
		}
		log.V(1).Info("retrying an Event's delivery", "key", ev.Key, "error", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-s.clock().After(backoff.Step()):
		}
	}
}

// deliverOnce reads the trigger as it is now and delivers ev to it.
func (s *EventSources) deliverOnce(ctx context.Context, key types.NamespacedName, ev triggers.Event) (int, error) {
	t, err := s.Lookup.Trigger(ctx, key)
	switch {
	case errors.Is(err, triggers.ErrNotFound):
		return http.StatusOK, nil // the trigger is gone, and its watches with it
	case err != nil:
		return http.StatusServiceUnavailable, err
	case t.Kind != triggers.KubernetesEvents:
		return http.StatusOK, nil // its source changed: its watches stop
	}
	_, status, err := s.Handler.Deliver(ctx, t, "", []triggers.Event{ev}, s.clock().Now())
	if err == nil && status >= http.StatusBadRequest {
		err = errors.New(http.StatusText(status))
	}
	return status, err
}
