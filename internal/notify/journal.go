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
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Event is one notification-worthy fact about a run: its kind and subject
// (the approval id, the attempt that lost an outcome, the end phase).
type Event struct {
	Kind    exagentv1.NotifyEvent
	Subject string
}

// ID is the notification's stable id, the same for every sink and every
// attempt: the run's UID, the event and its subject.
func ID(runUID string, e Event) string {
	return fmt.Sprintf("%s.%s.%s", runUID, kebab(string(e.Kind)), e.Subject)
}

func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Transitions returns the events that the commit old → next makes true:
// approvals that became pending, the run becoming Uncertain, the run ending.
func Transitions(old, next *exagentv1.AgentRunStatus) []Event {
	var out []Event
	for _, a := range next.Approvals {
		if a.State != exagentv1.ApprovalPending {
			continue
		}
		if was := old.Approval(a.ID); was == nil || was.State != exagentv1.ApprovalPending {
			out = append(out, Event{RequestedEvent(&a), a.ID})
		}
	}
	if next.Phase == exagentv1.PhaseUncertain && old.Phase != exagentv1.PhaseUncertain {
		out = append(out, Event{exagentv1.NotifyRunUncertain, "attempt-" + strconv.FormatInt(next.Attempts, 10)})
	}
	if next.Phase.IsTerminal() && !old.Phase.IsTerminal() {
		out = append(out, Event{exagentv1.NotifyRunEnded, string(next.Phase)})
	}
	return out
}

// ExpiryWarning is how long before a pending approval expires the
// ApprovalExpiring notification is due: a quarter of its timeout, at most
// an hour.
func ExpiryWarning(a *exagentv1.Approval) (time.Time, bool) {
	if a.ExpiresAt == nil || a.State != exagentv1.ApprovalPending {
		return time.Time{}, false
	}
	lead := min(a.ExpiresAt.Sub(a.RequestedAt.Time)/4, time.Hour)
	return a.ExpiresAt.Add(-lead), true
}

// Expiring returns the ApprovalExpiring events due at now (warning reached,
// not expired yet, not journaled already), and the next warning instant
// still to come. What was journaled is read from the approval
// (Approval.notified), not from the journal: a delivered record may have
// left the bounded journal, and must not be sent again for that.
func Expiring(st *exagentv1.AgentRunStatus, now time.Time) ([]Event, time.Time) {
	var due []Event
	var next time.Time
	if st.Phase != exagentv1.PhaseAwaitingApproval {
		return nil, next
	}
	for i := range st.Approvals {
		a := &st.Approvals[i]
		at, ok := ExpiryWarning(a)
		switch {
		case !ok || !now.Before(a.ExpiresAt.Time) || Notified(a, exagentv1.NotifyApprovalExpiring):
		case now.Before(at):
			if next.IsZero() || at.Before(next) {
				next = at
			}
		default:
			due = append(due, Event{exagentv1.NotifyApprovalExpiring, a.ID})
		}
	}
	return due, next
}

// Unannounced returns the ApprovalRequested events of pending approvals
// not journaled yet: the commit that made them pending had no room for
// them in the journal (or could not read the Agent's sinks).
func Unannounced(st *exagentv1.AgentRunStatus) []Event {
	var out []Event
	if st.Phase != exagentv1.PhaseAwaitingApproval {
		return nil
	}
	for i := range st.Approvals {
		if a := &st.Approvals[i]; a.State == exagentv1.ApprovalPending && !Notified(a, RequestedEvent(a)) {
			out = append(out, Event{RequestedEvent(a), a.ID})
		}
	}
	return out
}

// Due is every approval event still to journal at now (Unannounced, then
// Expiring), and the next warning instant still to come.
func Due(st *exagentv1.AgentRunStatus, now time.Time) ([]Event, time.Time) {
	expiring, next := Expiring(st, now)
	return append(Unannounced(st), expiring...), next
}

// Notified reports whether approval a's event e was journaled for every
// sink that wants it.
func Notified(a *exagentv1.Approval, e exagentv1.NotifyEvent) bool {
	return slices.Contains(a.Notified, e)
}

// approvalEvent: an event about one approval (its subject is the approval id).
func approvalEvent(e exagentv1.NotifyEvent) bool {
	return e == exagentv1.NotifyApprovalRequested || e == exagentv1.NotifyInputRequested || e == exagentv1.NotifyApprovalExpiring
}

// RequestedEvent is the event that announces request a: InputRequested
// for a question, ApprovalRequested otherwise.
func RequestedEvent(a *exagentv1.Approval) exagentv1.NotifyEvent {
	if a.IsQuestion() {
		return exagentv1.NotifyInputRequested
	}
	return exagentv1.NotifyApprovalRequested
}

// approvalRecords bounds the records of approval events, so the events of
// the run itself (RunUncertain, RunEnded: at most one of each pending per
// sink) always find room.
const approvalRecords = exagentv1.MaxNotificationRecords - 2*exagentv1.MaxNotifySinks

// Add journals a Pending record of each event for every sink that wants it
// and has none yet. An event is journaled for all its sinks at once or not
// at all: when the journal has no room (see makeRoom) it is left for
// later. An approval's event journaled for every sink is marked on the
// approval (Approval.notified); one left for later is still due (Due) and
// journaled once room is made — a pending notification is never dropped.
// Add reports whether it added any record, and the events it left.
func Add(st *exagentv1.AgentRunStatus, runUID string, events []Event, sinks []exagentv1.NotifySink, now time.Time) (bool, []Event) {
	added := false
	var left []Event
	for _, e := range events {
		id := ID(runUID, e)
		var need []string
		for i := range sinks {
			if s := &sinks[i]; s.Wants(e.Kind) && Find(st, id, s.Name) == nil {
				need = append(need, s.Name)
			}
		}
		if len(need) > 0 && !makeRoom(st, len(need), approvalEvent(e.Kind)) {
			left = append(left, e)
			continue
		}
		for _, sink := range need {
			st.Notifications = append(st.Notifications, exagentv1.NotificationRecord{
				ID: id, Event: e.Kind, Subject: e.Subject, Sink: sink,
				State: exagentv1.NotificationPending, At: metav1.NewTime(now.UTC().Truncate(time.Second)),
			})
			added = true
		}
		if a := st.Approval(e.Subject); a != nil && approvalEvent(e.Kind) && !Notified(a, e.Kind) {
			a.Notified = append(a.Notified, e.Kind)
		}
	}
	return added, left
}

// Find returns the record of notification id to sink, or nil.
func Find(st *exagentv1.AgentRunStatus, id, sink string) *exagentv1.NotificationRecord {
	for i := range st.Notifications {
		if r := &st.Notifications[i]; r.ID == id && r.Sink == sink {
			return r
		}
	}
	return nil
}

// Supersede settles the pending records whose subject no longer holds in
// st (the approval was decided or expired, the Uncertain run was resolved)
// or whose sink is gone from sinks (nil sinks: keep every sink). It
// reports whether it changed any.
func Supersede(st *exagentv1.AgentRunStatus, sinks []exagentv1.NotifySink, checkSinks bool) bool {
	changed := false
	for i := range st.Notifications {
		r := &st.Notifications[i]
		if r.State != exagentv1.NotificationPending {
			continue
		}
		why := ""
		switch r.Event {
		case exagentv1.NotifyApprovalRequested, exagentv1.NotifyInputRequested, exagentv1.NotifyApprovalExpiring:
			if a := st.Approval(r.Subject); a == nil || a.State != exagentv1.ApprovalPending {
				why = "the approval was settled before the notification was delivered"
			}
		case exagentv1.NotifyRunUncertain:
			if st.Phase != exagentv1.PhaseUncertain {
				why = "the run was resolved before the notification was delivered"
			}
		}
		if why == "" && checkSinks && sinkNamed(sinks, r.Sink) == nil {
			why = "the sink was removed from the Agent"
		}
		if why != "" {
			r.State, r.LastError = exagentv1.NotificationSuperseded, why
			changed = true
		}
	}
	return changed
}

func sinkNamed(sinks []exagentv1.NotifySink, name string) *exagentv1.NotifySink {
	for i := range sinks {
		if sinks[i].Name == name {
			return &sinks[i]
		}
	}
	return nil
}

// makeRoom makes the journal able to take n more records (of an approval
// event, when approval is set) within MaxNotificationRecords and
// approvalRecords, by dropping settled records, oldest first — only ones
// nothing would journal again: a settled record of a pending approval
// whose event is not marked notified stays (dropping it would re-send it).
// Pending records are never dropped. It reports whether there is room.
func makeRoom(st *exagentv1.AgentRunStatus, n int, approval bool) bool {
	for {
		total, approvals := len(st.Notifications), 0
		for i := range st.Notifications {
			if approvalEvent(st.Notifications[i].Event) {
				approvals++
			}
		}
		overTotal := total+n > exagentv1.MaxNotificationRecords
		overApprovals := approval && approvals+n > approvalRecords
		if !overTotal && !overApprovals {
			return true
		}
		drop := -1
		for i := range st.Notifications {
			r := &st.Notifications[i]
			if droppable(st, r) && (!overApprovals || approvalEvent(r.Event)) {
				drop = i
				break
			}
		}
		if drop < 0 {
			return false
		}
		st.Notifications = slices.Delete(st.Notifications, drop, drop+1)
	}
}

// droppable: a settled record that no Due would journal again.
func droppable(st *exagentv1.AgentRunStatus, r *exagentv1.NotificationRecord) bool {
	if r.State == exagentv1.NotificationPending {
		return false
	}
	if !approvalEvent(r.Event) {
		return true
	}
	a := st.Approval(r.Subject)
	return a == nil || a.State != exagentv1.ApprovalPending || Notified(a, r.Event)
}

// Journal is what a status commit does to the journal: it records the
// events the commit makes true (for the sinks that want them) and
// supersedes what it settled. The delivery worker sends what is Pending.
//
// Supersede comes first: what the commit settled makes room for what it
// makes true. It returns the events left for later (Add).
func Journal(old, next *exagentv1.AgentRunStatus, runUID string, sinks []exagentv1.NotifySink, now time.Time) []Event {
	if hasPending(next) {
		Supersede(next, nil, false) // first: what it settles makes room
	}
	if events := Transitions(old, next); len(events) > 0 && len(sinks) > 0 {
		_, left := Add(next, runUID, events, sinks, now)
		return left
	}
	return nil
}

// hasPending reports whether any record is still Pending (only those can
// be superseded).
func hasPending(st *exagentv1.AgentRunStatus) bool {
	for i := range st.Notifications {
		if st.Notifications[i].State == exagentv1.NotificationPending {
			return true
		}
	}
	return false
}

// Pending returns the indexes of the pending records.
func Pending(st *exagentv1.AgentRunStatus) []int {
	var out []int
	for i := range st.Notifications {
		if st.Notifications[i].State == exagentv1.NotificationPending {
			out = append(out, i)
		}
	}
	return out
}

// Retry bounds the attempts of one notification to one sink.
type Retry struct {
	// Attempts before a notification is Failed (default 8).
	Attempts int32
	// Base is the wait after the first failed attempt, doubled after each
	// (default 2s), up to Max (default 5m).
	Base, Max time.Duration
}

// WithDefaults fills unset fields.
func (r Retry) WithDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 8
	}
	if r.Base <= 0 {
		r.Base = 2 * time.Second
	}
	if r.Max <= 0 {
		r.Max = 5 * time.Minute
	}
	return r
}

// NextAttempt is when the record may be attempted again.
func (r Retry) NextAttempt(rec *exagentv1.NotificationRecord) time.Time {
	if rec.LastAttemptAt == nil || rec.Attempts == 0 {
		return time.Time{}
	}
	wait := r.Base
	for i := int32(1); i < rec.Attempts && wait < r.Max; i++ {
		wait *= 2
	}
	return rec.LastAttemptAt.Add(min(wait, r.Max))
}
