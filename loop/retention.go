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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Retention of ended runs (docs/architecture.md §15): when an ended run may be
// deleted, which runs an Agent's history limit lets go, and the journal of
// the run's archive. The controller lists, archives and deletes; these
// functions only decide, over data, with now passed in.

// Retention is what decides when an ended run is deleted.
type Retention struct {
	// TTL after the run ended; nil: no TTL.
	TTL *time.Duration
	// TTLSource says where TTL came from: TTLFromRun (the run's own
	// spec), TTLFromAgent or TTLFromManager (a default the run's author
	// may never have seen; see GitOpsManager).
	TTLSource TTLSource
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
		r.TTL, r.TTLSource = seconds(*run.TTLSecondsAfterFinished), TTLFromRun
	case agent != nil && agent.TTLSecondsAfterFinished != nil:
		r.TTL, r.TTLSource = seconds(*agent.TTLSecondsAfterFinished), TTLFromAgent
	case managerTTL > 0:
		r.TTL, r.TTLSource = &managerTTL, TTLFromManager
	}
	if agent != nil {
		r.KeepLast, r.Archive = agent.KeepLast, agent.Archive
	}
	return r
}

// TTLSource is where a run's TTL came from.
type TTLSource string

const (
	TTLFromRun     TTLSource = "the run's spec.ttlSecondsAfterFinished"
	TTLFromAgent   TTLSource = "its Agent's retention.ttlSecondsAfterFinished"
	TTLFromManager TTLSource = "the manager's --default-ttl-seconds-after-finished"
)

// GitOps tools' marks on the objects they apply (docs/gitops.md). A run
// one of them declares is re-created by the next sync if retention
// deletes it: a new UID, so every tool call runs again under new
// idempotency keys.
var (
	gitOpsLabels = []struct{ key, tool string }{
		{argoInstanceLabel, "Argo CD"}, // Argo CD's label tracking (the default before v3)
		{"kustomize.toolkit.fluxcd.io/name", "Flux"},
		{"kustomize.toolkit.fluxcd.io/namespace", "Flux"},
		{"helm.toolkit.fluxcd.io/name", "Flux"},
	}
	gitOpsAnnotations = []struct{ key, tool string }{
		{"argocd.argoproj.io/tracking-id", "Argo CD"}, // annotation tracking (the default since v3)
	}
)

// argoInstanceLabel is Argo CD's tracking label before v3; Helm charts set
// the same label, so the mark says so.
const argoInstanceLabel = "app.kubernetes.io/instance"

// GitOpsManager names the GitOps tool whose mark the object's labels or
// annotations carry, and the mark ("Argo CD", "label
// app.kubernetes.io/instance"); tool is empty when there is none.
func GitOpsManager(labels, annotations map[string]string) (tool, mark string) {
	for _, a := range gitOpsAnnotations {
		if _, ok := annotations[a.key]; ok {
			return a.tool, "annotation " + a.key
		}
	}
	for _, l := range gitOpsLabels {
		if _, ok := labels[l.key]; ok {
			if l.key == argoInstanceLabel {
				// Helm charts set it too: say how to tell exagent it is not Argo CD's.
				return l.tool, "label " + l.key + ", Argo CD's label tracking; if no GitOps tool syncs this run (Helm alone set the label), remove the label"
			}
			return l.tool, "label " + l.key
		}
	}
	return "", ""
}

// KeptFromGitOps says why retention leaves a GitOps-managed run alone
// (ok false: it does not). Retention never deletes such a run: not by a
// default the run's author may not have seen (the Agent's TTL, the
// manager's), not by the Agent's keepLast, and not by its own TTL either
// — the admission webhook refuses that TTL on a run a GitOps tool
// applies, so one found here was set before a GitOps tool adopted the run
// (admission does not see a label-only update). The GitOps tool deletes
// the run when it is removed from the source (prune).
func KeptFromGitOps(labels, annotations map[string]string, r Retention, byKeepLast bool) (string, bool) {
	tool, mark := GitOpsManager(labels, annotations)
	if tool == "" {
		return "", false
	}
	by := "its TTL comes from " + string(r.TTLSource)
	switch {
	case byKeepLast:
		by = "its Agent's retention.keepLast would let it go"
	case r.TTLSource == TTLFromRun:
		by = "its own spec.ttlSecondsAfterFinished was set before the GitOps tool adopted it"
	}
	return fmt.Sprintf("retention does not delete this run: %s manages it (%s) and would re-create it under a new UID, "+
		"running every tool call again under new idempotency keys; %s. Remove the run from the GitOps source to delete it "+
		"(docs/gitops.md, Retention)", tool, mark, by), true
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
// not: only an ended run, only once every notification it journaled is
// settled (a RunEnded still Pending would otherwise never be sent), and
// never while a call may still report what it did.
//
// A Cancelled run leaves a call that was in flight Uncertain, and the
// attempt that began it journals its outcome when it answers
// (RecordLateOutcome): that outcome is an effect that happened, worth
// the record. Such a call (Uncertain, no outcome, not delegated) holds
// the run until lateWindow after it started — the longest one call's IO
// may still answer — or for as long as running says the IO of this run
// is still in flight or unjournaled in this process. until is when to
// look again (zero: the outcome's journal, a write, brings it back).
func Reapable(s *Status, now time.Time, lateWindow time.Duration, running bool) (ok bool, why string, until time.Time) {
	if !s.Phase.IsTerminal() {
		return false, fmt.Sprintf("the run is %s, not ended", s.Phase), time.Time{}
	}
	for i := range s.Notifications {
		if n := &s.Notifications[i]; n.State == exagentv1.NotificationPending {
			return false, fmt.Sprintf("notification %s to sink %s is still pending", n.Event, n.Sink), time.Time{}
		}
	}
	for i := range s.Calls {
		c := &s.Calls[i]
		if c.State != exagentv1.CallUncertain || c.Outcome != nil || c.Child != "" {
			continue
		}
		if running {
			return false, fmt.Sprintf("call %s (%s) was in flight when the run ended and its IO still runs: its outcome is journaled first", c.ID, c.Tool), time.Time{}
		}
		if c.StartedAt != nil {
			if end := c.StartedAt.Add(lateWindow); now.Before(end) {
				return false, fmt.Sprintf("call %s (%s) was in flight when the run ended and may still answer until %s: its outcome is journaled first",
					c.ID, c.Tool, end.UTC().Format(time.RFC3339)), end
			}
		}
	}
	return true, "", time.Time{}
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

// ArchiveDigest is what an archive covers of a run: sha256 of its labels,
// annotations, spec and status, without status.archive (the journal of
// the archive itself), the conditions (a view of the rest, and Archived
// moves with the journal) and observedGeneration (every commit stamps it). Two versions with one digest carry
// the same record.
func ArchiveDigest(labels, annotations map[string]string, spec *exagentv1.AgentRunSpec, s *Status) string {
	st := s.DeepCopy()
	st.Archive, st.Conditions, st.ObservedGeneration = nil, nil, 0
	b, err := json.Marshal(struct {
		Labels      map[string]string       `json:"labels,omitempty"`
		Annotations map[string]string       `json:"annotations,omitempty"`
		Spec        *exagentv1.AgentRunSpec `json:"spec"`
		Status      *Status                 `json:"status"`
	}{labels, annotations, spec, st})
	if err != nil { // plain data: cannot fail; an empty digest covers nothing
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ArchiveCovers says whether the journaled archive covers the run as it is
// now (digest): delivered, of this very content. A run written after its
// archive was delivered (a late outcome) is not covered, and is archived
// again before it is deleted.
func ArchiveCovers(rec *exagentv1.ArchiveRecord, digest string) bool {
	return rec != nil && rec.State == exagentv1.ArchiveDelivered && digest != "" && rec.Digest == digest
}

// ArchiveAttemptID is the CloudEvent id of the next attempt to archive the
// run's content digest: ArchiveID for the first content attempted (and a
// record journaled before digests were), the same id again while the
// content stays what the last attempt sent, and ArchiveID with the
// digest's head once the content moved after an attempt — a sink that
// dedupes on the id must not drop the newer record as a duplicate.
func ArchiveAttemptID(rec *exagentv1.ArchiveRecord, runUID, digest string) string {
	switch {
	case rec == nil:
		return ArchiveID(runUID)
	case rec.Digest == digest, rec.Digest == "" && rec.State != exagentv1.ArchiveDelivered:
		return rec.ID
	}
	head := digest
	if i := len("sha256:"); len(head) > i+16 {
		head = head[i : i+16]
	}
	return ArchiveID(runUID) + "." + head
}

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

// NextAttempt is when the archive of the run's content id may be
// attempted again: at once when it was never attempted, is delivered, or
// the last attempt was of other content (another id).
func (r ArchiveRetry) NextAttempt(rec *exagentv1.ArchiveRecord, id string) time.Time {
	r = r.WithDefaults()
	if rec == nil || rec.ID != id || rec.State == exagentv1.ArchiveDelivered || rec.LastAttemptAt == nil || rec.Attempts == 0 {
		return time.Time{}
	}
	wait := r.Base
	for i := int32(1); i < rec.Attempts && wait < r.Max; i++ {
		wait *= 2
	}
	return rec.LastAttemptAt.Add(min(wait, r.Max))
}

// ArchiveAttempt is one attempt to send a run's archive.
type ArchiveAttempt struct {
	// ID of the CloudEvent sent (ArchiveAttemptID) and Digest of the
	// content it carried (ArchiveDigest).
	ID, Digest string
	// Sink is the name of the archive sink; Failure the error, empty when
	// the sink answered 2xx.
	Sink, Failure string
}

// RecordArchiveAttempt journals one attempt to send the run's archive:
// Delivered when a.Failure is empty, otherwise Pending with the error. An
// attempt of other content than the last (another id) starts a new
// record. Touches: status.archive only. Guards: nothing — an attempt is a
// fact; whether the run may then be deleted is the caller's
// (ArchiveCovers).
func RecordArchiveAttempt(s Status, a ArchiveAttempt, now time.Time) Status {
	out := *s.DeepCopy()
	at := secTime(now)
	rec := out.Archive
	if rec == nil || rec.ID != a.ID {
		rec = &exagentv1.ArchiveRecord{ID: a.ID, FirstAttemptAt: &at}
		out.Archive = rec
	}
	rec.Sink, rec.Digest = a.Sink, a.Digest
	rec.Attempts++
	rec.LastAttemptAt = &at
	if a.Failure == "" {
		rec.State, rec.LastError = exagentv1.ArchiveDelivered, ""
		return out
	}
	rec.State, rec.LastError = exagentv1.ArchivePending, truncateUTF8(a.Failure, 500)
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
