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
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/internal/secrets"
	"github.com/exagent-io/exagent/loop"
)

var notificationDeliveriesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "exagent_notification_deliveries_total",
	Help: "Notification delivery attempts and their end, by event and outcome (Delivered, Retrying: failed and tried again later, Failed: given up, Superseded: settled before delivery, Dropped: the journal had no room for a run event).",
}, []string{"event", "outcome"})

func init() { metrics.Registry.MustRegister(notificationDeliveriesTotal) }

// notifyTimeout bounds one delivery attempt.
const notifyTimeout = 10 * time.Second

// notifier delivers the notifications journaled in runs' status to the
// Agents' notify sinks. It is its own bounded pool of workers with its own
// queue and HTTP client: a slow or failing sink never holds a reconcile
// worker or an executor slot, and never blocks a run (the run's commits
// never wait for it). What is due is read from the stored status; each
// attempt's result is journaled with compare-and-swap, so a crash re-sends
// (the same id) and never forgets.
type notifier struct {
	client   client.Client // the cache: Agents
	reader   client.Reader // past the cache: the run as stored, Secrets
	store    *Store
	recorder events.EventRecorder
	clock    clock.PassiveClock
	http     *http.Client
	retry    notify.Retry
	workers  int
	hooks    Hooks
	informer cache.Informers
	queue    workqueue.TypedDelayingInterface[types.NamespacedName]
	// life is the context the controllers were set up with (the
	// manager's): it ends at the stop, before the runnables' own contexts.
	life context.Context
}

// NeedLeaderElection: one replica delivers (another one taking over re-sends
// what was not journaled, with the same id).
func (n *notifier) NeedLeaderElection() bool { return true }

// Start watches runs and delivers until ctx ends.
func (n *notifier) Start(ctx context.Context) error {
	inf, err := n.informer.GetInformer(ctx, &exagentv1.AgentRun{})
	if err != nil {
		return fmt.Errorf("notifier: informer of AgentRuns: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { n.enqueue(o) },
		UpdateFunc: func(_, o any) { n.enqueue(o) },
	})
	if err != nil {
		return fmt.Errorf("notifier: watching AgentRuns: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	runWorkers(ctx, n.workers, n.queue.ShutDown, n.work)
	return nil
}

// enqueue queues a run that has something to deliver now or later.
func (n *notifier) enqueue(o any) {
	run, ok := o.(*exagentv1.AgentRun)
	if !ok {
		return
	}
	if len(notify.Pending(&run.Status)) > 0 {
		n.queue.Add(client.ObjectKeyFromObject(run))
		return
	}
	if due, next := notify.Due(&run.Status, n.clock.Now()); len(due) == 0 && next.IsZero() {
		return
	}
	// An approval is still to announce or will expire: only a run whose
	// Agent has sinks is looked at.
	agent := &exagentv1.Agent{}
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}
	if err := n.client.Get(context.Background(), key, agent); err == nil && len(agent.Spec.Notify) > 0 {
		n.queue.Add(client.ObjectKeyFromObject(run))
	}
}

func (n *notifier) work(ctx context.Context) bool {
	key, quit := n.queue.Get()
	if quit {
		return false
	}
	defer n.queue.Done(key)
	after, err := n.process(ctx, key)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		logf.FromContext(ctx).Info("notifications not journaled; retrying", "run", key, "error", err.Error())
		n.queue.AddAfter(key, time.Second)
	case after > 0:
		n.queue.AddAfter(key, after)
	}
	return true
}

// process delivers what is due for one run and journals the results. It
// returns when to look again.
func (n *notifier) process(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	run := &exagentv1.AgentRun{}
	if err := n.reader.Get(ctx, key, run); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	if run.Status.Phase == exagentv1.PhaseRunning {
		// Nothing is announced while a run runs; never compete with its owner.
		return 0, nil
	}
	var sinks []exagentv1.NotifySink
	agent := &exagentv1.Agent{}
	if err := n.client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return 0, err
		}
		agent = nil
	} else {
		sinks = agent.Spec.Notify
	}
	now := n.clock.Now()
	next := run.Status.DeepCopy()
	changed := notify.Supersede(next, sinks, true)
	due, wake := notify.Due(next, now)
	var left []notify.Event
	if len(sinks) > 0 && len(due) > 0 {
		// Approval events the journal had no room for are journaled as
		// room is made (delivered records leave it): never dropped.
		var added bool
		before := marks(next)
		added, left = notify.Add(next, string(run.UID), due, sinks, now)
		changed = changed || added || marks(next) != before
	}
	delivered := false
	for _, i := range notify.Pending(next) {
		rec := &next.Notifications[i]
		if rec.State != exagentv1.NotificationPending {
			continue
		}
		if at := n.retry.NextAttempt(rec); now.Before(at) {
			wake = earliest(wake, at)
			continue
		}
		n.hooks.beforeNotify(ctx, key, *rec)
		if ctx.Err() != nil || (n.life != nil && n.life.Err() != nil) {
			return 0, nil // stopped at the hook: nothing journaled, the next process re-sends
		}
		err := n.deliver(ctx, run, next, agent, sinkNamed(sinks, rec.Sink), rec, now)
		n.settle(run, rec, err, now)
		if rec.State == exagentv1.NotificationPending {
			wake = earliest(wake, n.retry.NextAttempt(rec))
		} else {
			delivered = true
		}
		changed = true
	}
	if len(left) > 0 && delivered {
		wake = earliest(wake, now) // the settled records make room for what waits
	}
	if changed {
		if err := n.journal(ctx, run, next, now); err != nil {
			return 0, err
		}
	}
	if wake.IsZero() {
		return 0, nil
	}
	return max(wake.Sub(n.clock.Now()), 0) + 50*time.Millisecond, nil
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func sinkNamed(sinks []exagentv1.NotifySink, name string) *exagentv1.NotifySink {
	for i := range sinks {
		if sinks[i].Name == name {
			return &sinks[i]
		}
	}
	return nil
}

// deliver makes one attempt of rec to sink.
func (n *notifier) deliver(ctx context.Context, run *exagentv1.AgentRun, st *exagentv1.AgentRunStatus, agent *exagentv1.Agent,
	sink *exagentv1.NotifySink, rec *exagentv1.NotificationRecord, now time.Time) error {
	view := run.DeepCopy()
	view.Status = *st
	data := notify.Build(view, agent, notify.Event{Kind: rec.Event, Subject: rec.Subject})
	body, ctype, err := notify.Body(sink.FormatOrDefault(), rec.ID, rec.At.Time, rec.Subject, data)
	if err != nil {
		return fmt.Errorf("rendering: %w", err)
	}
	key := ""
	if ref := sink.SigningSecretRef; ref != nil {
		if key, err = secrets.Read(ctx, n.reader, run.Namespace, *ref); err != nil {
			return fmt.Errorf("signing key: %w", err)
		}
	}
	actx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	return notify.Send(actx, n.http, notify.Request{URL: sink.URL, ID: rec.ID, Body: body, ContentType: ctype, Key: key, At: now, Namespace: run.Namespace})
}

// settle records one attempt's result on rec, with its metric and Events.
func (n *notifier) settle(run *exagentv1.AgentRun, rec *exagentv1.NotificationRecord, err error, now time.Time) {
	rec.Attempts++
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	rec.LastAttemptAt = &at
	if err == nil {
		rec.State, rec.LastError = exagentv1.NotificationDelivered, ""
		notificationDeliveriesTotal.WithLabelValues(string(rec.Event), "Delivered").Inc()
		return
	}
	rec.LastError = truncate(err.Error(), exagentv1.MaxNotificationErrorBytes)
	if rec.Attempts >= n.retry.Attempts {
		rec.State = exagentv1.NotificationFailed
		notificationDeliveriesTotal.WithLabelValues(string(rec.Event), "Failed").Inc()
		n.event(run, "notification %s to sink %s failed %d times; not sent again: %s", rec.Event, rec.Sink, rec.Attempts, rec.LastError)
		return
	}
	notificationDeliveriesTotal.WithLabelValues(string(rec.Event), "Retrying").Inc()
	if rec.Attempts == 1 {
		n.event(run, "notification %s to sink %s failed (%s); retrying with backoff, at most %d attempts", rec.Event, rec.Sink, rec.LastError, n.retry.Attempts)
	}
}

func (n *notifier) event(run *exagentv1.AgentRun, format string, args ...any) {
	if n.recorder != nil {
		n.recorder.Eventf(run, nil, warning, exagentv1.EventNotificationFailed, exagentv1.EventNotificationFailed, format, args...)
	}
}

// journal writes the records of next with CAS. A conflict re-reads the
// run and carries this process's records over onto the newer status, so
// what was delivered is never forgotten by a write that lost the race.
func (n *notifier) journal(ctx context.Context, run *exagentv1.AgentRun, next *exagentv1.AgentRunStatus, now time.Time) error {
	for attempt := 0; ; attempt++ {
		_, err := n.store.Commit(ctx, run, *next, nil, now)
		if u, ok := AsUnstorable(err); ok {
			// Retrying the same write would re-send every delivery it
			// journals each time: the run's next change brings it back.
			logf.FromContext(ctx).Error(u, "notification journal not written: the apiserver refuses the run's status", "run", run.Name)
			n.event(run, "the notification journal could not be written (%s): %s", u.Reason, truncate(u.Error(), 800))
			return nil
		}
		if err == nil || !apierrorsIsConflict(err) || attempt >= 3 {
			return err
		}
		fresh := &exagentv1.AgentRun{}
		if err := n.reader.Get(ctx, client.ObjectKeyFromObject(run), fresh); err != nil {
			return err
		}
		merged := fresh.Status.DeepCopy()
		mergeRecords(merged, next)
		run, next = fresh, merged
	}
}

func apierrorsIsConflict(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, ErrConflict)
}

// mergeRecords puts ours onto st: a record still Pending in st takes our
// progress; one we added is appended; settled ones in st stay; what we
// marked journaled on an approval stays marked.
func mergeRecords(st *exagentv1.AgentRunStatus, ours *exagentv1.AgentRunStatus) {
	for _, a := range ours.Approvals {
		if have := st.Approval(a.ID); have != nil {
			for _, e := range a.Notified {
				if !notify.Notified(have, e) {
					have.Notified = append(have.Notified, e)
				}
			}
		}
	}
	for _, r := range ours.Notifications {
		if have := notify.Find(st, r.ID, r.Sink); have != nil {
			if have.State == exagentv1.NotificationPending {
				*have = r
			}
			continue
		}
		st.Notifications = append(st.Notifications, r)
	}
	notify.Supersede(st, nil, false)
}

// journalTransitions journals, in the commit that makes them true, one Pending record
// per event and sink that wants it, and supersedes what the commit
// settled. Called by Store.Commit on every status write.
func (n *notifier) journalTransitions(ctx context.Context, run *exagentv1.AgentRun, next *loop.Status, now time.Time) {
	var sinks []exagentv1.NotifySink
	if len(notify.Transitions(&run.Status, next)) > 0 {
		agent := &exagentv1.Agent{}
		if err := n.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}, agent); err == nil {
			sinks = agent.Spec.Notify
		} // else: an approval not marked notified is still due, and the notifier journals it
	}
	left := notify.Journal(&run.Status, next, string(run.UID), sinks, now) // the one journaling rule (internal/notify)
	for _, e := range left {
		if e.Kind == exagentv1.NotifyApprovalRequested || e.Kind == exagentv1.NotifyApprovalExpiring {
			continue // still due (notify.Due): journaled as room is made
		}
		// The run's own events always have room (notify's approvalRecords);
		// should one not, it is counted and said, never silently lost.
		notificationDeliveriesTotal.WithLabelValues(string(e.Kind), "Dropped").Inc()
		logf.FromContext(ctx).Error(errors.New("notification journal full"), "a notification could not be journaled",
			"run", run.Name, "event", e.Kind, "subject", e.Subject)
		n.event(run, "notification %s (%s) could not be journaled: the journal holds %d records, none of them settled",
			e.Kind, e.Subject, len(next.Notifications))
	}
}

// marks counts the approvals' notified marks (a change to journal).
func marks(st *exagentv1.AgentRunStatus) int {
	n := 0
	for i := range st.Approvals {
		n += len(st.Approvals[i].Notified)
	}
	return n
}
