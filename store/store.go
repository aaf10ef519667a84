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

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/life"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/loop"
)

// ErrFenceLost means this process no longer owns the run: the commit was
// not made and must not be retried. What the caller learned is dropped;
// the run goes on from what is stored (docs/architecture.md §4.3, §4.6).
var ErrFenceLost = errors.New("fence lost: the run is no longer owned by this attempt")

// ErrSummary means a status was computed from the cache's summary of a
// waiting run (CacheOptions): it is computed again from the run read past
// the cache.
var ErrSummary = errors.New("computed from the cache's summary of a waiting run")

// ErrUnknownFormat means the run's journal is of a newer format than this
// release writes (status.formatVersion): it is never written from here.
var ErrUnknownFormat = errors.New("the run's journal is of a newer format than this manager knows")

// ErrConflict means the object changed since it was read but the fence
// (when one was given) still holds: re-read and apply again.
var ErrConflict = errors.New("run changed since it was read")

// UnstorableError is a write the store can never make: the apiserver
// refused the status itself — invalid (HTTP 422), too large (413, or
// etcd's "request is too large") — or the seal could not bound it, or a
// transcript segment the commit needed was refused: by a ResourceQuota of
// the namespace, by an admission check, as invalid or too large.
// Unlike an unreachable apiserver or a conflict, retrying the same write
// can only fail again, so the caller ends the run (loop.FailUnstorable)
// instead of retrying it for ever.
type UnstorableError struct {
	// Reason is exagentv1.ReasonStatusTooLarge, ReasonStatusRejected or
	// ReasonSegmentQuotaExceeded.
	Reason string
	// Segment tells that what was refused is a segment, not the status:
	// the status last stored is as it was, and the commit that ends the
	// run must not seal anything new (it would be refused the same way).
	Segment bool
	Err     error
}

func (e *UnstorableError) Error() string { return e.Err.Error() }
func (e *UnstorableError) Unwrap() error { return e.Err }

// AsUnstorable returns err's UnstorableError, if it has one.
func AsUnstorable(err error) (*UnstorableError, bool) {
	var u *UnstorableError
	ok := errors.As(err, &u)
	return u, ok
}

// unstorable classifies an apiserver error: an UnstorableError when the
// write itself is refused, nil otherwise (transient: retried).
func unstorable(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(err.Error(), "request is too large"):
		return &UnstorableError{Reason: exagentv1.ReasonStatusTooLarge, Err: fmt.Errorf("%s: refused as too large: %w", what, err)}
	case apierrors.IsInvalid(err):
		return &UnstorableError{Reason: exagentv1.ReasonStatusRejected, Err: fmt.Errorf("%s: refused as invalid: %w", what, err)}
	}
	return nil
}

// unstorableSegment classifies the error of creating a transcript
// segment: what unstorable says, and two refusals a create meets that are
// final for this write — a ResourceQuota of the namespace that is full
// (403 "exceeded quota": the count of agentrunsegments.exagent.io, which
// does not empty itself while the run waits) and an admission webhook or
// policy that denies the object ("admission webhook … denied the request",
// "ValidatingAdmissionPolicy … denied request"). A quota whose usage is
// not computed yet ("status unknown for quota"), a webhook that could not
// be called and RBAC refusing the manager are none of these: retried.
func unstorableSegment(err error, what string) error {
	var u *UnstorableError
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota"):
		u = &UnstorableError{Reason: exagentv1.ReasonSegmentQuotaExceeded, Err: fmt.Errorf("%s: refused by a ResourceQuota: %w", what, err)}
	case strings.Contains(msg, "admission webhook") && strings.Contains(msg, "denied the request"),
		strings.Contains(msg, "ValidatingAdmissionPolicy") && strings.Contains(msg, "denied request"):
		u = &UnstorableError{Reason: exagentv1.ReasonStatusRejected, Err: fmt.Errorf("%s: refused by admission: %w", what, err)}
	default:
		if errors.As(unstorable(err, what), &u) {
			break
		}
		return nil
	}
	u.Segment = true
	return u
}

// QuotaName is the ResourceQuota an apiserver refusal names ("exceeded
// quota: NAME, requested: …"), "" when it names none.
func QuotaName(msg string) string {
	_, rest, ok := strings.Cut(msg, "exceeded quota: ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ",")
	return strings.TrimSpace(name)
}

// Store is the one place that writes a run's status. Every write is an
// Update of the status subresource carrying the resourceVersion that was
// read (compare-and-swap), never a patch.
type Store struct {
	client client.Client
	// reader reads past the cache after a conflict, to tell a lost fence
	// from a mere concurrent write.
	reader client.Reader

	mu      sync.Mutex
	written map[types.NamespacedName]written

	writes    atomic.Int64
	conflicts atomic.Int64
	refused   atomic.Int64

	// tracer and holder follow every write that landed with the
	// attempt's spans; observer is told of every write (the metrics).
	tracer   *telemetry.Tracer
	holder   string
	observer Observer

	// segments creates what the seal step moved out of a status, before
	// the write that references it (docs/architecture.md §10).
	segments *Segments
	// life is the manager's context: a stop at the segments hook stops the commit.
	life  context.Context
	hooks Hooks
}

// WithSegments makes the store create the segments a write's steps ask
// for (CommitSteps.Seal).
func (s *Store) WithSegments(life context.Context, segs *Segments, hooks Hooks) *Store {
	s.life, s.segments, s.hooks = life, segs, hooks
	if segs != nil {
		segs.observer = s.observer
	}
	return s
}

// Segments is the segment store the writes create segments in (nil when
// the store writes none): readers of sealed content use the same cache.
func (s *Store) Segments() *Segments { return s.segments }

// WithObserver makes the store tell o of every write and segment.
func (s *Store) WithObserver(o Observer) *Store {
	s.observer = o
	if s.segments != nil {
		s.segments.observer = o
	}
	return s
}

// WithTracer makes every write that landed end and start the attempts'
// spans (Tracer.Committed).
func (s *Store) WithTracer(t *telemetry.Tracer, holder string) *Store {
	s.tracer, s.holder = t, holder
	return s
}

// written is a status this process committed whose write the cache may
// not have seen yet. behind holds the resourceVersions of the unbroken
// chain of this store's writes that led to obj (each write's CAS was on
// the version before it, so no other write came in between): a cached
// copy at any of them is older than obj.
type written struct {
	behind []string
	obj    *exagentv1.AgentRun
}

// maxBehind bounds the chain remembered per run; a cache lagging further
// behind only costs a conflict.
const maxBehind = 16

// NewStore builds the store.
func NewStore(c client.Client, reader client.Reader) *Store {
	return &Store{client: c, reader: reader, written: map[types.NamespacedName]written{}}
}

// Writes is the number of successful status writes (for the benchmark).
func (s *Store) Writes() int64 { return s.writes.Load() }

// Conflicts is the number of writes refused for a stale resourceVersion.
func (s *Store) Conflicts() int64 { return s.conflicts.Load() }

// Refused is the number of writes the apiserver refused for good
// (UnstorableError): each ends its run, so it stays small.
func (s *Store) Refused() int64 { return s.refused.Load() }

// Fresher returns the newer of the cached run and the last run this store
// wrote: when the cache still holds a version this store's own chain of
// writes replaced, the written copy is the truth. That spares a certain
// conflict and, more important, keeps an owner from reading its run older
// than its own last commit (results it holds would look unexpected there).
func (s *Store) Fresher(cached *exagentv1.AgentRun) *exagentv1.AgentRun {
	key := client.ObjectKeyFromObject(cached)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.written[key]
	if !ok {
		return cached
	}
	if cached.UID == w.obj.UID && slices.Contains(w.behind, cached.ResourceVersion) {
		return w.obj.DeepCopy()
	}
	delete(s.written, key) // the cache caught up (or moved past us)
	return cached
}

// remember records a write from version prev to out.
func (s *Store) remember(prev string, out *exagentv1.AgentRun) {
	key := client.ObjectKeyFromObject(out)
	s.mu.Lock()
	defer s.mu.Unlock()
	behind := []string{prev}
	if w, ok := s.written[key]; ok && w.obj.UID == out.UID &&
		(w.obj.ResourceVersion == prev || slices.Contains(w.behind, prev)) {
		behind = append(slices.Clone(w.behind), w.obj.ResourceVersion)
		if !slices.Contains(behind, prev) {
			behind = append(behind, prev)
		}
		if len(behind) > maxBehind {
			behind = behind[len(behind)-maxBehind:]
		}
	}
	s.written[key] = written{behind: behind, obj: out.DeepCopy()}
}

// Forget drops what the store remembers of a run.
func (s *Store) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.written, key)
}

// Commit writes w.Status, shaped by w.Steps in their order, as the
// status of w.Run with CAS on w.Run's resourceVersion: the one place a
// run's status is written. Conditions are recomputed from the status (a
// view of the journal, plus w.Overrides) and observedGeneration is set.
// The segments the steps ask for are created first.
//
// With a fence, the commit is an owner's: the claim of w.Run (the object
// the transition was computed from) must be the fence's attempt, and the
// status written must carry a lease valid now (every owner commit extends
// it, loop.Extend). The read object's lease may have lapsed — a live owner
// whose results waited in a queue takes its claim back — because the CAS
// on the read version proves no other process recovered or claimed the
// run since. After a conflict the fresh object is read to tell which case
// it is — the fence still holds (ErrConflict: recompute and retry) or it
// does not (ErrFenceLost: drop everything).
func (s *Store) Commit(ctx context.Context, w Write) (*exagentv1.AgentRun, error) {
	run, next, now := w.Run, w.Status, w.Now
	if isSummary(run) {
		// The cache's summary of a waiting run lacks its journal: a status
		// computed from it would erase the transcript. Callers read the run
		// past the cache first (ErrSummary); this is the last guard.
		return nil, fmt.Errorf("run %s/%s: %w", run.Namespace, run.Name, ErrSummary)
	}
	if !run.Status.KnownFormat() {
		// A newer release wrote this journal: nothing computed from our
		// reading of it may replace it (docs/upgrading.md).
		return nil, fmt.Errorf("run %s/%s: journal format %d, this manager writes %d: %w",
			run.Namespace, run.Name, run.Status.Format(), exagentv1.JournalFormat, ErrUnknownFormat)
	}
	if w.Fence != nil {
		if err := loop.CheckOwner(&run.Status, *w.Fence); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFenceLost, err)
		}
		if c := next.Claim; next.Phase == exagentv1.PhaseRunning && !loop.AwaitingChildren(next) &&
			(c == nil || !now.Before(c.LeaseExpiresAt.Time)) {
			return nil, fmt.Errorf("%w: the status to write carries no valid lease", ErrFenceLost)
		}
	}
	d := &Draft{Run: run, Status: &next, Now: now}
	for _, step := range w.Steps {
		if err := step(ctx, d); err != nil {
			if _, ok := AsUnstorable(err); ok {
				s.refused.Add(1)
			}
			return nil, err
		}
	}
	if err := s.createSegments(ctx, run, d.Segments); err != nil {
		return nil, err
	}
	out := run.DeepCopy()
	next.DeepCopyInto(&out.Status)
	out.Status.Conditions = mergeConditions(run.Status.Conditions, loop.Conditions(next, run.Generation, now), w.Overrides)
	out.Status.ObservedGeneration = run.Generation
	// Every write is in this release's format, whatever format was read.
	out.Status.FormatVersion = exagentv1.JournalFormat
	prevRV := run.ResourceVersion
	s.hooks.beforeStatusWrite(ctx, client.ObjectKeyFromObject(run), &out.Status)
	if err := s.client.Status().Update(ctx, out); err != nil {
		s.observer.writeFailed(err)
		if apierrors.IsConflict(err) {
			s.conflicts.Add(1)
		}
		if u := unstorable(err, fmt.Sprintf("the status of run %s/%s", run.Namespace, run.Name)); u != nil {
			s.refused.Add(1)
			return nil, u
		}
		if !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("updating status of run %s/%s: %w", run.Namespace, run.Name, err)
		}
		if w.Fence == nil {
			return nil, fmt.Errorf("%w: %v", ErrConflict, err)
		}
		return nil, s.recheckFence(ctx, run, *w.Fence, err)
	}
	s.writes.Add(1)
	s.observer.committed(run, out, now)
	conversation := ""
	if ref := out.Spec.ConversationRef; ref != nil {
		conversation = ref.Name
	}
	s.tracer.Committed(client.ObjectKeyFromObject(out), out.Spec.AgentRef.Name, conversation, &run.Status, &out.Status, s.holder, now)
	s.remember(prevRV, out)
	return out, nil
}

// createSegments creates the segments the steps asked for. The commit
// that references them comes after, so a crash in between leaves only
// segments nobody references (same content, same name next time).
func (s *Store) createSegments(ctx context.Context, run *exagentv1.AgentRun, segs []segment.Segment) error {
	if len(segs) == 0 {
		return nil
	}
	if s.segments == nil {
		return fmt.Errorf("run %s/%s: a step sealed segments but the store writes none", run.Namespace, run.Name)
	}
	if err := s.segments.Create(ctx, run, segs); err != nil {
		if u := unstorableSegment(err, fmt.Sprintf("a transcript segment of run %s/%s", run.Namespace, run.Name)); u != nil {
			s.refused.Add(1)
			return u
		}
		return err
	}
	key := client.ObjectKeyFromObject(run)
	s.hooks.afterSegmentsCreated(ctx, key, segs)
	if life.Stopping(ctx, s.life) {
		return fmt.Errorf("%w: stopped after creating the segments of run %s", ErrFenceLost, key)
	}
	return nil
}

// recheckFence reads the run past the cache after a conflict.
func (s *Store) recheckFence(ctx context.Context, run *exagentv1.AgentRun, f loop.Fence, cause error) error {
	fresh := &exagentv1.AgentRun{}
	if err := s.reader.Get(ctx, client.ObjectKeyFromObject(run), fresh); err != nil {
		return fmt.Errorf("re-reading run %s/%s after a conflict (%v): %w", run.Namespace, run.Name, cause, err)
	}
	if err := loop.CheckOwner(&fresh.Status, f); err != nil {
		return fmt.Errorf("%w: %v", ErrFenceLost, err)
	}
	return fmt.Errorf("%w: %v", ErrConflict, cause)
}

// mergeConditions is the computed conditions, each keeping the
// lastTransitionTime it had in old when its status did not change, then
// the overrides (e.g. Ready=False AgentNotFound). A condition old has and
// computed no longer reports is dropped: only conditions that say
// something are written (loop.Conditions).
func mergeConditions(old, computed, overrides []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(computed)+len(overrides))
	for _, c := range computed {
		if prev := meta.FindStatusCondition(old, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
		out = append(out, c)
	}
	for _, c := range overrides {
		meta.SetStatusCondition(&out, c)
	}
	return out
}
