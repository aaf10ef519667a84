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

package notify

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

var deliveriesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "exagent_notification_deliveries_total",
	Help: "Notification delivery attempts and their end, by event and outcome (Delivered, Retrying: failed and tried again later, Failed: given up, Superseded: settled before delivery, Dropped: the journal had no room for a run event).",
}, []string{"event", "outcome"})

func init() { metrics.Registry.MustRegister(deliveriesTotal) }

// settle records one attempt's result on rec, with its metric and Events.
func (d *Deliverer) settle(run *exagentv1.AgentRun, rec *exagentv1.NotificationRecord, err error, now time.Time) {
	rec.Attempts++
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	rec.LastAttemptAt = &at
	if err == nil {
		rec.State, rec.LastError = exagentv1.NotificationDelivered, ""
		deliveriesTotal.WithLabelValues(string(rec.Event), "Delivered").Inc()
		return
	}
	rec.LastError = Excerpt(err.Error(), exagentv1.MaxNotificationErrorBytes)
	if rec.Attempts >= d.c.Retry.Attempts {
		rec.State = exagentv1.NotificationFailed
		deliveriesTotal.WithLabelValues(string(rec.Event), "Failed").Inc()
		d.event(run, "notification %s to sink %s failed %d times; not sent again: %s", rec.Event, rec.Sink, rec.Attempts, rec.LastError)
		return
	}
	deliveriesTotal.WithLabelValues(string(rec.Event), "Retrying").Inc()
	if rec.Attempts == 1 {
		d.event(run, "notification %s to sink %s failed (%s); retrying with backoff, at most %d attempts", rec.Event, rec.Sink, rec.LastError, d.c.Retry.Attempts)
	}
}

// Dropped reports event e of run that the commit making it true could not
// journal (a journal of records records, none of them settled): counted
// (outcome Dropped), logged and said in a NotificationFailed Event, never
// silently lost. Store.Commit's journaling calls it; the run's own events
// always have room (approvalRecords), so it should never be called.
func (d *Deliverer) Dropped(ctx context.Context, run *exagentv1.AgentRun, e Event, records int) {
	deliveriesTotal.WithLabelValues(string(e.Kind), "Dropped").Inc()
	logf.FromContext(ctx).Error(errors.New("notification journal full"), "a notification could not be journaled",
		"run", run.Name, "event", e.Kind, "subject", e.Subject)
	d.event(run, "notification %s (%s) could not be journaled: the journal holds %d records, none of them settled",
		e.Kind, e.Subject, records)
}

// event records a NotificationFailed Event about run.
func (d *Deliverer) event(run *exagentv1.AgentRun, format string, args ...any) {
	if d.c.Recorder != nil {
		d.c.Recorder.Eventf(run, nil, corev1.EventTypeWarning, exagentv1.EventNotificationFailed, exagentv1.EventNotificationFailed, format, args...)
	}
}
