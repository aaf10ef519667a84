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

package eventqueue

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Defaults of Options.
const (
	DefaultQueueSize    = 16384
	DefaultWorkers      = 8
	DefaultDrainTimeout = 5 * time.Second
	// maxTries bounds the attempts at one Event on transient errors.
	maxTries = 3
	// maxNoteBytes is the events.k8s.io/v1 limit of note.
	maxNoteBytes = 1024
	// writeTimeout bounds one attempt at an Event.
	writeTimeout = 10 * time.Second
)

var droppedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "exagent_events_dropped_total",
	Help: "Events the manager did not write, by why (QueueFull: recorded faster than the apiserver took them; Error: refused or failed after retries; Stopped: still queued when the stop's drain timed out).",
}, []string{"why"})

var queued = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "exagent_events_queued",
	Help: "Events waiting in the manager's queue to be written.",
})

func init() { metrics.Registry.MustRegister(droppedTotal, queued) }

// Options tune a Queue; zero values take the defaults.
type Options struct {
	// QueueSize bounds the Events waiting to be written.
	QueueSize int
	// Workers write Events at once: few, so Events never crowd out the
	// status writes they describe (DefaultWorkers).
	Workers int
	// DrainTimeout bounds how long the queue is still written at the stop.
	DrainTimeout time.Duration
	// Instance is the reporting instance (default: the hostname).
	Instance string
	Clock    clock.PassiveClock
}

// Queue writes Events through Client. It is a manager Runnable (Start)
// and hands out a recorder per reporting controller (Recorder).
type Queue struct {
	client  client.Client
	scheme  *runtime.Scheme
	opts    Options
	log     logr.Logger
	pending chan *eventsv1.Event
	mu      sync.Mutex
	stopped bool
}

// New returns a Queue writing with c; scheme resolves the kinds of the
// objects Events are about.
func New(c client.Client, scheme *runtime.Scheme, log logr.Logger, o Options) *Queue {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.Instance == "" {
		o.Instance, _ = os.Hostname()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Queue{client: c, scheme: scheme, opts: o, log: log, pending: make(chan *eventsv1.Event, o.QueueSize)}
}

// Recorder returns the events.EventRecorder of one reporting controller.
func (q *Queue) Recorder(controller string) events.EventRecorder {
	instance := controller + "-" + q.opts.Instance
	if len(instance) > 128 { // the API's bound on reportingInstance
		instance = instance[:128]
	}
	return &recorder{q: q, controller: controller, instance: instance}
}

// NeedLeaderElection: every replica writes the Events of its own commits.
func (q *Queue) NeedLeaderElection() bool { return false }

// Start writes queued Events until ctx ends, then what is left for at
// most DrainTimeout.
func (q *Queue) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range q.opts.Workers {
		wg.Go(func() { q.work(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
	// From now on a recorder writes its Event itself (enqueue): the queue
	// only takes in no more, and writes what it holds.
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	drain, cancel := context.WithTimeout(context.Background(), q.opts.DrainTimeout)
	defer cancel()
	q.drain(drain)
	for { // whatever the drain had no time for is dropped, counted
		select {
		case <-q.pending:
			queued.Dec()
			droppedTotal.WithLabelValues("Stopped").Inc()
		default:
			return nil
		}
	}
}

// work writes Events until ctx ends. A write is not cut by ctx (the
// stop's drain would only queue it again): writeTimeout bounds it.
func (q *Queue) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-q.pending:
			queued.Dec()
			wctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			q.write(wctx, ev)
			cancel()
		}
	}
}

// drain writes what waits in the queue until it is empty or ctx ends.
func (q *Queue) drain(ctx context.Context) {
	for ctx.Err() == nil {
		select {
		case ev := <-q.pending:
			queued.Dec()
			q.write(ctx, ev)
		default:
			return
		}
	}
}

// write creates ev, retrying transient errors a few times.
func (q *Queue) write(ctx context.Context, ev *eventsv1.Event) {
	var err error
	for try := 1; try <= maxTries; try++ {
		err = q.client.Create(ctx, ev)
		switch {
		case err == nil:
			return
		case apierrors.IsAlreadyExists(err):
			// Two Events of one object in the same nanosecond: a new name.
			ev = ev.DeepCopy()
			ev.Name, ev.ResourceVersion = eventName(ev.Regarding.Name, q.opts.Clock.Now(), try), ""
			continue
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err):
			try = maxTries // not transient: a namespace being deleted, RBAC, a bad Event
			continue
		}
		if try < maxTries {
			select {
			case <-ctx.Done():
				try = maxTries
			case <-time.After(time.Duration(try) * 200 * time.Millisecond):
			}
		}
	}
	droppedTotal.WithLabelValues("Error").Inc()
	q.log.V(1).Info("could not write an Event", "namespace", ev.Namespace, "object", ev.Regarding.Name,
		"reason", ev.Reason, "error", err.Error())
}

// enqueue hands ev to the workers without ever waiting — but once the
// queue has stopped, when no worker is left, it writes ev itself, at once
// (writeTimeout bounds it): the Events of what the manager still commits
// while it stops (runs handed back, and ended, in the releaser's drain)
// are not lost, and nothing else writes Events.
func (q *Queue) enqueue(ev *eventsv1.Event) {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		q.write(ctx, ev)
		return
	}
	defer q.mu.Unlock()
	select {
	case q.pending <- ev:
		queued.Inc()
	default:
		droppedTotal.WithLabelValues("QueueFull").Inc()
		q.log.V(1).Info("the Event queue is full: an Event was dropped", "namespace", ev.Namespace,
			"object", ev.Regarding.Name, "reason", ev.Reason)
	}
}

type recorder struct {
	q          *Queue
	controller string
	instance   string
}

// Eventf implements events.EventRecorder.
func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ref, err := reference.GetReference(r.q.scheme, regarding)
	if err != nil {
		r.q.log.Error(err, "could not refer to the object of an Event", "reason", reason)
		return
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(r.q.scheme, related); err != nil {
			rel = nil
		}
	}
	now := r.q.opts.Clock.Now()
	ns := ref.Namespace
	if ns == "" {
		ns = "default"
	}
	ev := &eventsv1.Event{
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             rel,
		Note:                truncate(fmt.Sprintf(note, args...), maxNoteBytes),
		Type:                eventtype,
	}
	ev.Name, ev.Namespace = eventName(ref.Name, now, 0), ns
	r.q.enqueue(ev)
}

// Queued is the gauge of Events waiting in this process's queues (tests read it).
func Queued() prometheus.Gauge { return queued }

// DroppedTotal is the counter of Events dropped for why (tests read it).
func DroppedTotal(why string) prometheus.Counter { return droppedTotal.WithLabelValues(why) }
