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

package retention

import (
	"context"
	"errors"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/archive"
	"github.com/exagent-io/exagent/internal/clip"
	"github.com/exagent-io/exagent/internal/life"
	"github.com/exagent-io/exagent/internal/secrets"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// reap deletes a due root run and its tree, each run archived first when
// its Agent has retention.archive, each with its segments and decisions.
// Every step is idempotent, so work a crash interrupts is finished when
// the run is reaped again: a delivered archive is journaled (not sent
// again while the run's content is the one it covers); a run already
// deleted leaves its decisions and segments to the garbage collector. It
// returns when to look again when the run cannot go yet (its archive sink
// fails: the backoff), 0 otherwise.
//
// Order, for each run of the tree, deepest first, then the root:
//  1. the run as stored is read past the cache, and must still be the run
//     decided on (same UID), ended, with no notification pending and no
//     call whose outcome may still come (loop.Reapable);
//  2. with an archive sink and no delivered archive of the run's content
//     as it is now (loop.ArchiveCovers): after the backoff, the whole
//     record is sent; the attempt is journaled (status.archive, with the
//     digest of the content sent) whatever its outcome; a failure holds
//     the run — condition, Event, metric — and nothing is deleted; a
//     journal that had to be written on a newer version (the run moved
//     while it was sent) covers nothing, and the run is archived again;
//  3. the run is deleted with a resourceVersion precondition: the version
//     whose archive was delivered. A run written meanwhile is looked at
//     again, and archived again before it goes: nothing unarchived is
//     ever deleted;
//  4. its decisions and segments go after it, with the garbage collector
//     (their owner is the run), so a run that moved keeps what its next
//     archive reads.
func (r *Reaper) reap(ctx context.Context, cached *exagentv1.AgentRun, reason string) (time.Duration, error) {
	key := client.ObjectKeyFromObject(cached)
	if !r.take(reapItem{key: key}) {
		return 0, nil // another worker is reaping it, and looks again if it must
	}
	defer r.release(reapItem{key: key})
	root := &exagentv1.AgentRun{}
	if err := r.reader.Get(ctx, key, root); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if root.UID != cached.UID {
		return 0, nil // re-created: the new run is looked at on its own
	}
	if ok, why, until := r.reapable(root); !ok {
		// Its own next write (the notification Deliverer's journal, a late
		// outcome's) brings it back, or the clock.
		logf.FromContext(ctx).V(1).Info("retention: the run is due but kept for now", "run", key, "why", why)
		return r.lookAgainAt(until), nil
	}
	tree, err := r.descendants(ctx, root)
	if err != nil {
		return 0, err
	}
	for i := range tree {
		if ok, why, until := r.reapable(&tree[i]); !ok {
			// The child's end (or the notification Deliverer's journal of it) brings the root back.
			logf.FromContext(ctx).V(1).Info("retention: the run is due but its tree is not done", "run", key, "child", tree[i].Name, "why", why)
			return r.lookAgainAt(until), nil
		}
	}
	for i := range tree {
		if after, err := r.archiveAndDelete(ctx, &tree[i], deletedWithRoot); err != nil || after > 0 {
			return after, err
		}
	}
	return r.archiveAndDelete(ctx, root, reason)
}

// reapable is loop.Reapable of a run read past the cache, on the
// controllers' clock, with what this process knows of the run's IO.
func (r *Reaper) reapable(run *exagentv1.AgentRun) (bool, string, time.Time) {
	running := r.running != nil && r.running(client.ObjectKeyFromObject(run))
	return loop.Reapable(&run.Status, r.clock.Now(), r.lateWindow, running)
}

// lookAgainAt is how long until at (0 when at is zero: a write brings
// the run back), at least a millisecond.
func (r *Reaper) lookAgainAt(at time.Time) time.Duration {
	if at.IsZero() {
		return 0
	}
	return max(at.Sub(r.clock.Now()), time.Millisecond)
}

// descendants are the runs of root's delegation tree, deepest first, each
// read past the cache (their whole status is archived). A run that never
// delegated has none: its status.children journals every child before
// the child is created, so no list is made for it.
func (r *Reaper) descendants(ctx context.Context, root *exagentv1.AgentRun) ([]exagentv1.AgentRun, error) {
	if len(root.Status.Children) == 0 && !slices.ContainsFunc(root.Status.Calls, func(c exagentv1.ToolCall) bool { return c.Child != "" }) {
		return nil, nil
	}
	var list exagentv1.AgentRunList
	if err := r.client.List(ctx, &list, client.InNamespace(root.Namespace),
		client.MatchingLabels{exagentv1.LabelRootRun: exagentv1.LabelValue(root.Name)}); err != nil {
		return nil, fmt.Errorf("listing the delegation tree of run %s/%s: %w", root.Namespace, root.Name, err)
	}
	var out []exagentv1.AgentRun
	for i := range list.Items {
		d := list.Items[i].Spec.Delegation
		if d == nil || d.Root.UID != string(root.UID) {
			continue
		}
		run := &exagentv1.AgentRun{}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(&list.Items[i]), run); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading run %s of the delegation tree of %s: %w", list.Items[i].Name, root.Name, err)
		}
		if run.UID == list.Items[i].UID {
			out = append(out, *run)
		}
	}
	slices.SortStableFunc(out, func(a, b exagentv1.AgentRun) int {
		return len(b.Spec.Delegation.Ancestry) - len(a.Spec.Delegation.Ancestry)
	})
	return out, nil
}

// archiveAndDelete is steps 2–4 of reap for one run read past the cache.
func (r *Reaper) archiveAndDelete(ctx context.Context, run *exagentv1.AgentRun, reason string) (time.Duration, error) {
	key := client.ObjectKeyFromObject(run)
	if agent := r.agentOf(ctx, run); agent != nil && agent.Spec.Retention.Archive != nil {
		covered, after, err := r.archive(ctx, run, archiveTo{sink: agent.Spec.Retention.Archive, agent: agent.Name})
		if err != nil || after > 0 {
			return after, err
		}
		run = covered
	}
	if err := r.deleteRun(ctx, run); err != nil {
		return 0, err
	}
	retentionDeletedTotal.WithLabelValues(reason).Inc()
	logf.FromContext(ctx).Info("retention deleted an ended run with its segments and decisions", "run", key, "why", reason,
		"archived", run.Status.Archive != nil && run.Status.Archive.State == exagentv1.ArchiveDelivered)
	return 0, nil
}

// archiveTo is where and as what a run is archived.
type archiveTo struct {
	sink *exagentv1.NotifySink
	// agent is the Agent whose retention.archive sink is (said in the
	// Events of a held run).
	agent string
	// conv is set for a turn archived with its conversation (of): its
	// record and its digest say which conversation and the turn's place,
	// and a failure is said on the Conversation too.
	conv *archive.Conversation
	of   *exagentv1.Conversation
}

// archive is step 2 of reap: it returns the run as stored once a
// delivered archive covers it (at once when one did already), or how long
// until the next attempt while its sink fails (after > 0: the run is held,
// nothing may be deleted). A run that moved while its archive was sent
// is errRunChanged: it is archived again.
func (r *Reaper) archive(ctx context.Context, run *exagentv1.AgentRun, to archiveTo) (*exagentv1.AgentRun, time.Duration, error) {
	key := client.ObjectKeyFromObject(run)
	digest := archiveDigest(run, to.conv)
	if loop.ArchiveCovers(run.Status.Archive, digest) {
		return run, 0, nil
	}
	now := r.clock.Now()
	id := loop.ArchiveAttemptID(run.Status.Archive, string(run.UID), digest)
	if next := r.retry.NextAttempt(run.Status.Archive, id); now.Before(next) {
		return nil, next.Sub(now), nil // held: the backoff since the last failure
	}
	sent := r.send(ctx, run, to, id, now)
	if err := r.beforeArchiveJournal(ctx, key, sent); err != nil {
		return nil, 0, fmt.Errorf("archive of run %s abandoned before it was journaled: %w", key, err)
	}
	if life.Stopping(ctx, r.life) {
		return nil, 0, context.Canceled // stopping: nothing journaled, the archive is sent again
	}
	written, err := r.journal(ctx, run, loop.ArchiveAttempt{ID: id, Digest: digest, Sink: to.sink.Name}, sent, now)
	if u, ok := store.AsUnstorable(err); ok {
		// The apiserver refuses the run's status for good (it was at its
		// size limit): the journal is bookkeeping, the sink's answer is
		// what counts. Delivered: delete (on the version read). Failed:
		// nothing remembers the attempt, so wait the longest backoff.
		// (The Event is written from a queue, not the run's status.)
		r.unjournaled(run, to, sent, u)
		if sent != nil {
			archiveAttemptsTotal.WithLabelValues("Failed").Inc()
			return nil, r.retry.WithDefaults().Max, nil
		}
		archiveAttemptsTotal.WithLabelValues("Delivered").Inc()
		return run, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("journaling the archive of run %s: %w", key, err)
	}
	if sent != nil {
		archiveAttemptsTotal.WithLabelValues("Failed").Inc()
		r.held(written, to, sent)
		next := r.retry.NextAttempt(written.Status.Archive, id)
		return nil, max(next.Sub(r.clock.Now()), time.Millisecond), nil
	}
	archiveAttemptsTotal.WithLabelValues("Delivered").Inc()
	if !loop.ArchiveCovers(written.Status.Archive, archiveDigest(written, to.conv)) {
		// The journal met a newer version (a late outcome, a label): what
		// was delivered is not what would be deleted. Archived again.
		logf.FromContext(ctx).Info("retention: the run changed while its archive was sent; archiving it again", "run", key)
		return nil, 0, fmt.Errorf("run %s/%s changed while its archive was sent (%w)", run.Namespace, run.Name, errRunChanged)
	}
	return written, 0, nil
}

// errRunChanged: the run was written after it was read to be deleted; it
// is looked at again at once (a conflict, not a failure).
var errRunChanged = errors.New("looking again")

// archiveDigest is loop.ArchiveDigest of run, for a turn with its place
// in its conversation (loop.TurnArchiveDigest).
func archiveDigest(run *exagentv1.AgentRun, conv *archive.Conversation) string {
	d := loop.ArchiveDigest(run.Labels, run.Annotations, &run.Spec, &run.Status)
	if conv == nil {
		return d
	}
	return loop.TurnArchiveDigest(d, loop.TurnArchive{Conversation: conv.Name, ConversationUID: conv.UID, Turn: conv.Turn, Turns: conv.Turns})
}

// send makes one attempt to deliver run's archive to its sink, as CloudEvent id.
func (r *Reaper) send(ctx context.Context, run *exagentv1.AgentRun, to archiveTo, id string, now time.Time) error {
	sink := to.sink
	var chain []segment.Segment
	if r.segments != nil {
		c, err := r.segments.ChainOnce(ctx, run)
		if err != nil {
			return fmt.Errorf("reading the run's transcript: %w", err)
		}
		chain = c
	}
	decisions, err := decisionsOf(ctx, r.client, run)
	if err != nil {
		return err
	}
	key := ""
	if ref := sink.SigningSecretRef; ref != nil {
		if key, err = secrets.Read(ctx, r.reader, run.Namespace, *ref); err != nil {
			return fmt.Errorf("signing key: %w", err)
		}
	}
	in := archive.Input{Run: run, Chain: chain, Decisions: decisions, Conversation: to.conv, ID: id, At: now}
	actx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return archive.Send(actx, r.http, archive.Request{URL: sink.URL, ID: in.ID, Key: key, At: now, Namespace: run.Namespace,
		Write: func(w io.Writer) error { return archive.Write(w, in) }})
}

// journal records the attempt in the run's status with CAS; a run written
// meanwhile is read again and the attempt recorded on it (a fact: it was
// made) — its digest then differs from the run's, so the newer version is
// not covered by it (the caller archives again). The status is written
// unsealed: an ended run has nothing more to seal, and a run a refused
// segment ended must not meet that refusal again.
func (r *Reaper) journal(ctx context.Context, run *exagentv1.AgentRun, a loop.ArchiveAttempt, sent error, now time.Time) (*exagentv1.AgentRun, error) {
	if sent != nil {
		a.Failure = sent.Error()
	}
	for attempt := 0; ; attempt++ {
		next := loop.RecordArchiveAttempt(run.Status, a, now)
		written, err := r.store.Commit(ctx, store.Write{Run: run, Status: next, Now: now, Steps: r.steps.Unsealed(r.steps.AgentSinks(ctx, run))})
		if err == nil {
			return written, nil
		}
		if !isConflict(err) || attempt >= 3 {
			return nil, err
		}
		fresh := &exagentv1.AgentRun{}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(run), fresh); err != nil {
			return nil, err
		}
		if fresh.UID != run.UID {
			return nil, fmt.Errorf("run %s was re-created", run.Name)
		}
		run = fresh
	}
}

// held tells why a run is kept: a Warning Event at the first failures and
// then at each doubling of their count (1, 2, 4, 8, …: a sink down for a
// day costs a dozen Events, not hundreds). The condition is in the
// journal's commit; the gauge exagent_retention_held_runs counts the
// runs whose archive is pending.
func (r *Reaper) held(run *exagentv1.AgentRun, to archiveTo, sent error) {
	rec := run.Status.Archive
	logf.FromContext(r.life).Info("retention: the archive sink failed; the run is kept", "run", run.Name, "namespace", run.Namespace,
		"sink", rec.Sink, "attempts", rec.Attempts, "error", sent.Error())
	if r.recorder == nil || rec.Attempts&(rec.Attempts-1) != 0 {
		return
	}
	r.recorder.Eventf(run, nil, corev1.EventTypeWarning, exagentv1.ReasonArchiveSinkFailing, exagentv1.ReasonArchiveSinkFailing,
		"the archive sink %s failed (attempt %d: %s); the run is kept, never deleted unarchived, and sent again with backoff: fix the sink, or remove retention.archive from agent %s",
		rec.Sink, rec.Attempts, truncate(rec.LastError, 500), to.agent)
	if to.of != nil {
		r.heldConversation(to.of, run, to.agent)
	}
}

// unjournaled says, in the log and (for a failed attempt, which holds the
// run) in an Event, that an archive attempt could not be journaled
// because the apiserver refuses the run's status.
func (r *Reaper) unjournaled(run *exagentv1.AgentRun, to archiveTo, sent error, u *store.UnstorableError) {
	sink := to.sink.Name
	logf.FromContext(r.life).Error(u, "retention: an archive attempt could not be journaled", "run", run.Name, "namespace", run.Namespace,
		"sink", sink, "delivered", sent == nil)
	if sent == nil || r.recorder == nil {
		return
	}
	r.recorder.Eventf(run, nil, corev1.EventTypeWarning, exagentv1.ReasonArchiveSinkFailing, exagentv1.ReasonArchiveSinkFailing,
		"the archive sink %s failed (%s) and the attempt could not be journaled, the apiserver refusing the run's status (%s): "+
			"the run is kept and sent again in %s; fix the sink, or remove retention.archive from agent %s",
		sink, truncate(sent.Error(), 300), u.Reason, r.retry.WithDefaults().Max, to.agent)
}

// deleteRun deletes run on the version read (the one archived, when it
// was): a resourceVersion precondition, so a version written since —
// which no archive covers — is never deleted; it is looked at again
// (errRunChanged), and archived again. Its decisions and segments go after
// it, never before, with the garbage collector (each has the run as
// owner): a run that turns out to have moved keeps everything its next
// archive reads.
func (r *Reaper) deleteRun(ctx context.Context, run *exagentv1.AgentRun) error {
	err := r.client.Delete(ctx, run, client.Preconditions{UID: &run.UID, ResourceVersion: &run.ResourceVersion},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("run %s/%s changed since it was read (%w): %v", run.Namespace, run.Name, errRunChanged, err)
	default:
		return fmt.Errorf("deleting run %s/%s: %w", run.Namespace, run.Name, err)
	}
}

// beforeArchiveJournal runs the test hook, if any.
func (r *Reaper) beforeArchiveJournal(ctx context.Context, run types.NamespacedName, sent error) error {
	if r.beforeJournal == nil {
		return nil
	}
	return r.beforeJournal(ctx, run, sent)
}

// isConflict reports a write that lost its compare-and-swap.
func isConflict(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, store.ErrConflict)
}

// truncate bounds a message quoted in an Event.
func truncate(s string, n int) string { return clip.Bytes(s, n, clip.Ellipsis) }
