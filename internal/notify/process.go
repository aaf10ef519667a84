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
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/life"
	"github.com/exagent-io/exagent/internal/secrets"
)

// attemptTimeout bounds one delivery attempt.
const attemptTimeout = 10 * time.Second

// process delivers what is due for one run and journals the results. It
// returns when to look again.
func (d *Deliverer) process(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	run := &exagentv1.AgentRun{}
	if err := d.c.Reader.Get(ctx, key, run); err != nil {
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
	if err := d.c.Cache.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return 0, err
		}
		agent = nil
	} else {
		sinks = agent.Spec.Notify
	}
	now := d.c.Clock.Now()
	next := run.Status.DeepCopy()
	changed := Supersede(next, sinks, true)
	due, wake := Due(next, now)
	var left []Event
	if len(sinks) > 0 && len(due) > 0 {
		// Approval events the journal had no room for are journaled as
		// room is made (delivered records leave it): never dropped.
		var added bool
		before := marks(next)
		added, left = Add(next, string(run.UID), due, sinks, now)
		changed = changed || added || marks(next) != before
	}
	delivered := false
	for _, i := range Pending(next) {
		rec := &next.Notifications[i]
		if rec.State != exagentv1.NotificationPending {
			continue
		}
		if at := d.c.Retry.NextAttempt(rec); now.Before(at) {
			wake = earliest(wake, at)
			continue
		}
		if d.c.BeforeNotify != nil {
			d.c.BeforeNotify(ctx, key, *rec)
		}
		if life.Stopping(ctx, d.c.Life) {
			return 0, nil // stopped at the hook: nothing journaled, the next process re-sends
		}
		err := d.deliver(ctx, run, next, agent, sinkNamed(sinks, rec.Sink), rec, now)
		d.settle(run, rec, err, now)
		if rec.State == exagentv1.NotificationPending {
			wake = earliest(wake, d.c.Retry.NextAttempt(rec))
		} else {
			delivered = true
		}
		changed = true
	}
	if len(left) > 0 && delivered {
		wake = earliest(wake, now) // the settled records make room for what waits
	}
	if changed {
		if err := d.journal(ctx, run, next, now); err != nil {
			return 0, err
		}
	}
	if wake.IsZero() {
		return 0, nil
	}
	return max(wake.Sub(d.c.Clock.Now()), 0) + 50*time.Millisecond, nil
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// marks counts the approvals' notified marks (a change to journal).
func marks(st *exagentv1.AgentRunStatus) int {
	n := 0
	for i := range st.Approvals {
		n += len(st.Approvals[i].Notified)
	}
	return n
}

// deliver makes one attempt of rec to sink.
func (d *Deliverer) deliver(ctx context.Context, run *exagentv1.AgentRun, st *exagentv1.AgentRunStatus, agent *exagentv1.Agent,
	sink *exagentv1.NotifySink, rec *exagentv1.NotificationRecord, now time.Time) error {
	view := run.DeepCopy()
	view.Status = *st
	data := Build(view, agent, Event{Kind: rec.Event, Subject: rec.Subject})
	data.Links = d.c.UIURL.links(data)
	body, ctype, err := Body(sink.FormatOrDefault(), rec.ID, rec.At.Time, rec.Subject, data)
	if err != nil {
		return fmt.Errorf("rendering: %w", err)
	}
	key := ""
	if ref := sink.SigningSecretRef; ref != nil {
		if key, err = secrets.Read(ctx, d.c.Reader, run.Namespace, *ref); err != nil {
			return fmt.Errorf("signing key: %w", err)
		}
	}
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	return Send(actx, d.c.HTTP, Request{URL: sink.URL, ID: rec.ID, Body: body, ContentType: ctype, Key: key, At: now, Namespace: run.Namespace})
}
