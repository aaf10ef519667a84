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
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/triggers"
)

// EventTriggerEventsDropped is the Warning Event on an AgentTrigger whose
// events were dropped (past maxRunsPerHour or maxConcurrentRuns, or while
// suspended) since the last flush.
const EventTriggerEventsDropped = "EventsDropped"

// TriggerFlushInterval is how often a replica adds what its listener saw
// to the triggers' status: one status write per active trigger per
// interval, however many events arrive.
const TriggerFlushInterval = 10 * time.Second

// maxTriggerStats bounds the triggers whose unflushed counts are kept.
const maxTriggerStats = 4096

var triggerEventsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "exagent_trigger_events_total",
	Help: "Events received by AgentTriggers, by namespace and what became of them (run, duplicate, rate_limited, over_concurrency, suspended).",
}, []string{"namespace", "outcome"})

// TriggerStats is the listener's triggers.Recorder: it counts each
// trigger's events in memory and adds them to the trigger's status every
// TriggerFlushInterval (Flush), with a Warning Event when some were
// dropped. Every replica runs one (each serves deliveries); each adds only
// its own deltas, with compare-and-swap, so the counts sum over replicas.
type TriggerStats struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.WithTicker
	Log      logr.Logger

	mu      sync.Mutex
	pending map[types.NamespacedName]*triggerDelta
}

// triggerDelta is what one trigger saw since the last flush.
type triggerDelta struct {
	counts    map[triggers.Outcome]int
	lastEvent time.Time
	lastRun   string
	lastRunAt time.Time
}

var _ triggers.Recorder = &TriggerStats{}

// Record adds a delivery's outcomes (triggers.Recorder).
func (s *TriggerStats) Record(key types.NamespacedName, counts map[triggers.Outcome]int, lastRun string, at time.Time) {
	for o, n := range counts {
		if n > 0 {
			triggerEventsTotal.WithLabelValues(key.Namespace, string(o)).Add(float64(n))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[types.NamespacedName]*triggerDelta{}
	}
	d, ok := s.pending[key]
	if !ok {
		if len(s.pending) >= maxTriggerStats {
			// Past the bound the counts are lost, the metric is not.
			return
		}
		d = &triggerDelta{counts: map[triggers.Outcome]int{}}
		s.pending[key] = d
	}
	for o, n := range counts {
		d.counts[o] += n
	}
	d.lastEvent = at
	if lastRun != "" {
		d.lastRun, d.lastRunAt = lastRun, at
	}
}

// Start flushes every TriggerFlushInterval until ctx ends, and once more
// then (manager.Runnable, on every replica).
func (s *TriggerStats) Start(ctx context.Context) error {
	t := s.Clock.NewTicker(TriggerFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.Flush(flushCtx)
			return nil
		case <-t.C():
			s.Flush(ctx)
		}
	}
}

// NeedLeaderElection is false: every replica serves deliveries.
func (s *TriggerStats) NeedLeaderElection() bool { return false }

// Flush adds the pending counts to each trigger's status. A trigger whose
// write failed keeps its counts for the next flush; a deleted one drops them.
func (s *TriggerStats) Flush(ctx context.Context) {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for key, d := range pending {
		err := s.flushOne(ctx, key, d)
		switch {
		case err == nil, apierrors.IsNotFound(err):
		default:
			if !apierrors.IsConflict(err) {
				s.Log.Error(err, "adding a trigger's counts to its status", "trigger", key)
			}
			s.restore(key, d)
		}
	}
}

// restore puts d back for the next flush, merged with what came since.
func (s *TriggerStats) restore(key types.NamespacedName, d *triggerDelta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[types.NamespacedName]*triggerDelta{}
	}
	cur, ok := s.pending[key]
	if !ok {
		s.pending[key] = d
		return
	}
	for o, n := range d.counts {
		cur.counts[o] += n
	}
	if d.lastEvent.After(cur.lastEvent) {
		cur.lastEvent = d.lastEvent
	}
	if cur.lastRun == "" || d.lastRunAt.After(cur.lastRunAt) {
		if d.lastRun != "" {
			cur.lastRun, cur.lastRunAt = d.lastRun, d.lastRunAt
		}
	}
}

func (s *TriggerStats) flushOne(ctx context.Context, key types.NamespacedName, d *triggerDelta) error {
	at := &exagentv1.AgentTrigger{}
	if err := s.Client.Get(ctx, key, at); err != nil {
		return err
	}
	dropped := d.counts[triggers.OutcomeRateLimited] + d.counts[triggers.OutcomeOverConcurrency] + d.counts[triggers.OutcomeSuspended]
	c := &at.Status.Counts
	for _, n := range d.counts {
		c.Events += int64(n)
	}
	c.Runs += int64(d.counts[triggers.OutcomeRun])
	c.Duplicates += int64(d.counts[triggers.OutcomeDuplicate])
	c.Dropped += int64(dropped)
	if !d.lastEvent.IsZero() && (at.Status.LastEventTime == nil || d.lastEvent.After(at.Status.LastEventTime.Time)) {
		at.Status.LastEventTime = &metav1.Time{Time: d.lastEvent}
	}
	if d.lastRun != "" && (at.Status.LastRunTime == nil || !d.lastRunAt.Before(at.Status.LastRunTime.Time)) {
		at.Status.LastRunName, at.Status.LastRunTime = d.lastRun, &metav1.Time{Time: d.lastRunAt}
	}
	// Update, not patch: the counts are sums, so a write computed from a
	// stale read must fail (Conflict) and be redone from a fresh one.
	if err := s.Client.Status().Update(ctx, at); err != nil {
		return fmt.Errorf("writing AgentTrigger %s's counts: %w", key, err)
	}
	if dropped > 0 && s.Recorder != nil {
		s.Recorder.Eventf(at, nil, corev1.EventTypeWarning, EventTriggerEventsDropped, "Deliver",
			"dropped %d event(s) since the last count: %d past maxRunsPerHour, %d past maxConcurrentRuns, %d while suspended",
			dropped, d.counts[triggers.OutcomeRateLimited], d.counts[triggers.OutcomeOverConcurrency], d.counts[triggers.OutcomeSuspended])
	}
	return nil
}
