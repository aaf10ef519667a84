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

package loop

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Retention of ended runs (docs/architecture.md §15): when an ended run may be
// deleted, which runs an Agent's history limit lets go, and the journal of
// the run's archive. The controller lists, archives and deletes; these
// functions only decide, over data, with now passed in.

// Retention is what decides when an ended run is deleted.
type Retention struct {
	// TTL after the run ended; nil: no TTL.
	TTL *time.Duration
	// KeepLast is the Agent's history limit; nil: none.
	KeepLast *int32
	// Archive is the Agent's archive sink; nil: the run is deleted unarchived.
	Archive *exagentv1.NotifySink
}

// ResolveRetention is the retention of a run: its own
// spec.ttlSecondsAfterFinished, else its Agent's
// retention.ttlSecondsAfterFinished, else the manager's default (0: none);
// the Agent's keepLast and archive. agent is nil when the Agent is gone: a
// run it left keeps its own TTL or the manager's, and has no archive.
func ResolveRetention(run *exagentv1.AgentRunSpec, agent *exagentv1.RetentionSpec, managerTTL time.Duration) Retention {
	var r Retention
	seconds := func(n int32) *time.Duration {
		d := time.Duration(max(n, 0)) * time.Second
		return &d
	}
	switch {
	case run.TTLSecondsAfterFinished != nil:
		r.TTL = seconds(*run.TTLSecondsAfterFinished)
	case agent != nil && agent.TTLSecondsAfterFinished != nil:
		r.TTL = seconds(*agent.TTLSecondsAfterFinished)
	case managerTTL > 0:
		r.TTL = &managerTTL
	}
	if agent != nil {
		r.KeepLast, r.Archive = agent.KeepLast, agent.Archive
	}
	return r
}

// EndedAt is when an ended run ended: the lastTransitionTime of its Ended
// condition, which the commit that ended it set and no later commit moves
// (a condition whose status stays keeps its time). A run ended by a
// manager that wrote no Ended condition falls back to the latest
// transition of its conditions, then to created. ok is false for a run
// that has not ended.
func EndedAt(s *Status, created time.Time) (time.Time, bool) {
	if !s.Phase.IsTerminal() {
		return time.Time{}, false
	}
	var latest time.Time
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type == exagentv1.ConditionEnded && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
		if c.LastTransitionTime.After(latest) {
			latest = c.LastTransitionTime.Time
		}
	}
	if latest.IsZero() {
		return created, true
	}
	return latest, true
}

// TTLExpiry is when the run's TTL lets it go: when it ended plus the TTL.
// ok is false when the run has no TTL or has not ended.
func TTLExpiry(s *Status, created time.Time, r Retention) (time.Time, bool) {
	if r.TTL == nil {
		return time.Time{}, false
	}
	ended, ok := EndedAt(s, created)
	if !ok {
		return time.Time{}, false
	}
	return ended.Add(*r.TTL), true
}

// Reapable says whether retention may delete an ended run now, and why
// not: only an ended run, and only once every notification it journaled
// is settled (a RunEnded still Pending would otherwise never be sent).
func Reapable(s *Status) (bool, string) {
	if !s.Phase.IsTerminal() {
		return false, fmt.Sprintf("the run is %s, not ended", s.Phase)
	}
	for i := range s.Notifications {
		if n := &s.Notifications[i]; n.State == exagentv1.NotificationPending {
			return false, fmt.Sprintf("notification %s to sink %s is still pending", n.Event, n.Sink)
		}
	}
	return true, ""
}

// EndedRun is what a history limit reads of one ended run.
type EndedRun struct {
	Name    string
	Created time.Time
	Ended   time.Time
}

// BeyondKeepLast returns the indexes (into runs) of the runs that are not
// among the keep newest: newest by when they ended, then by creation,
// then by name (so equal times still give one order).
func BeyondKeepLast(runs []EndedRun, keep int) []int {
	if keep < 0 || len(runs) <= keep {
		return nil
	}
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &runs[a], &runs[b]
		if c := y.Ended.Compare(x.Ended); c != 0 {
			return c
		}
		if c := y.Created.Compare(x.Created); c != 0 {
			return c
		}
		switch {
		case x.Name > y.Name:
			return -1
		case x.Name < y.Name:
			return 1
		}
		return 0
	})
	out := order[keep:]
	slices.Sort(out)
	return out
}

// ArchiveID is the CloudEvent id of a run's archive: the same on every
// attempt, after a crash and from every replica, so the sink dedupes on it.
func ArchiveID(runUID string) string { return runUID + ".run-archived" }

// ArchiveRetry bounds the wait between attempts to archive one run. The
// attempts themselves are not bounded: a run whose archive is not
// delivered is never deleted.
type ArchiveRetry struct {
	// Base is the wait after the first failed attempt (default 1s),
	// doubled after each, up to Max (default 5m).
	Base, Max time.Duration
}

// WithDefaults fills unset fields.
func (r ArchiveRetry) WithDefaults() ArchiveRetry {
	if r.Base <= 0 {
		r.Base = time.Second
	}
	if r.Max <= 0 {
		r.Max = 5 * time.Minute
	}
	return r
}

// NextAttempt is when the archive may be attempted again: at once when it
// was never attempted or is delivered.
func (r ArchiveRetry) NextAttempt(rec *exagentv1.ArchiveRecord) time.Time {
	r = r.WithDefaults()
	if rec == nil || rec.State == exagentv1.ArchiveDelivered || rec.LastAttemptAt == nil || rec.Attempts == 0 {
		return time.Time{}
	}
	wait := r.Base
	for i := int32(1); i < rec.Attempts && wait < r.Max; i++ {
		wait *= 2
	}
	return rec.LastAttemptAt.Add(min(wait, r.Max))
}

// RecordArchiveAttempt journals one attempt to send the run's archive to
// sink: Delivered when failure is empty, otherwise Pending with the
// error. Touches: status.archive only. Guards: nothing — an attempt is a
// fact; whether the run may then be deleted is the caller's (Delivered).
func RecordArchiveAttempt(s Status, runUID, sink, failure string, now time.Time) Status {
	out := *s.DeepCopy()
	at := secTime(now)
	rec := out.Archive
	if rec == nil {
		rec = &exagentv1.ArchiveRecord{ID: ArchiveID(runUID), FirstAttemptAt: &at}
		out.Archive = rec
	}
	rec.Sink = sink
	rec.Attempts++
	rec.LastAttemptAt = &at
	if failure == "" {
		rec.State, rec.LastError = exagentv1.ArchiveDelivered, ""
		return out
	}
	rec.State, rec.LastError = exagentv1.ArchivePending, truncateUTF8(failure, 500)
	return out
}

// archiveCondition is the Archived condition of a run with an archive
// journal: True once delivered, False while a failing sink holds the run.
func archiveCondition(s *Status, mk func(t string, st metav1.ConditionStatus, reason, msg string) metav1.Condition) []metav1.Condition {
	rec := s.Archive
	if rec == nil {
		return nil
	}
	if rec.State == exagentv1.ArchiveDelivered {
		return []metav1.Condition{mk(exagentv1.ConditionArchived, metav1.ConditionTrue, exagentv1.ReasonArchiveDelivered,
			fmt.Sprintf("archive %s delivered to sink %s after %d attempt(s); retention deletes the run", rec.ID, rec.Sink, rec.Attempts))}
	}
	return []metav1.Condition{mk(exagentv1.ConditionArchived, metav1.ConditionFalse, exagentv1.ReasonArchiveSinkFailing,
		fmt.Sprintf("the archive sink %s failed %d time(s), last: %s. The run is kept, never deleted unarchived, and sent again with backoff (at most every 5m): "+
			"fix the sink, or remove retention.archive from the Agent to let retention delete the run without an archive",
			rec.Sink, rec.Attempts, rec.LastError))}
}
