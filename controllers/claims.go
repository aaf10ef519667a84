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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// errClaimGone and errRunGone are the causes a run's jobs are cancelled with.
var (
	errClaimGone = errors.New("the run's claim is no longer this attempt's")
	errRunGone   = errors.New("the run was deleted (or re-created under its name)")
)

// claims remembers, per run, the claim this process holds as of its own
// last commit: the run's UID, the fence, and the lease that commit wrote.
// Jobs ask it, at the moment they would start, whether the claim they were
// dispatched under still holds with time to spare (docs/architecture.md §4.1: no IO
// on a claim known to be stale); losing the claim or the run cancels the
// context every job of that claim runs with.
//
// It is memory only, written from commits and reads of this process: it
// never grants anything the store did not (a commit that extends the lease
// is the only way the lease grows here).
type claims struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]*claimState
}

type claimState struct {
	uid   types.UID
	fence loop.Fence
	lease time.Time
	// stopped is set when the claim ended in a way that lets running jobs
	// finish (a Cancel: their outcomes are still journaled) but no new job
	// may start.
	stopped bool
	ctx     context.Context
	cancel  context.CancelCauseFunc
}

func newClaims() *claims { return &claims{runs: map[types.NamespacedName]*claimState{}} }

// committed records the claim a commit of this process wrote: the newest
// truth about the run, so it creates, extends or replaces the entry.
func (c *claims) committed(run *exagentv1.AgentRun, holder string) {
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	cl := run.Status.Claim
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.runs[key]
	if cur != nil && cur.uid != run.UID {
		cur.cancel(errRunGone)
		delete(c.runs, key)
		cur = nil
	}
	if run.Status.Phase == exagentv1.PhaseRunning && cl != nil && cl.Holder == holder {
		f := loop.Fence{Holder: cl.Holder, Attempt: cl.Attempt}
		if cur != nil && cur.fence == f {
			if cl.LeaseExpiresAt.After(cur.lease) {
				cur.lease = cl.LeaseExpiresAt.Time
			}
			return
		}
		if cur != nil {
			cur.cancel(errClaimGone)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		c.runs[key] = &claimState{uid: run.UID, fence: f, lease: cl.LeaseExpiresAt.Time, ctx: ctx, cancel: cancel}
		return
	}
	if cur != nil {
		c.endLocked(key, cur, run.Status.Phase)
	}
}

// observed applies what the informer says about the run. The cache may lag
// this process's own commits, so only facts that cannot be stale count: a
// version written at or after this attempt's claim (status.attempts is
// bumped by every claim) that no longer shows this attempt's claim. An
// older version, or another run under the same name, changes nothing here.
func (c *claims) observed(run *exagentv1.AgentRun) {
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.runs[key]
	if cur == nil || cur.uid != run.UID || run.Status.Attempts < cur.fence.Attempt {
		return
	}
	if cl := run.Status.Claim; run.Status.Phase == exagentv1.PhaseRunning && cl != nil &&
		cl.Holder == cur.fence.Holder && cl.Attempt == cur.fence.Attempt {
		if cl.LeaseExpiresAt.After(cur.lease) {
			cur.lease = cl.LeaseExpiresAt.Time
		}
		return
	}
	c.endLocked(key, cur, run.Status.Phase)
}

// endLocked ends a claim: a Cancel lets the running jobs finish (their
// outcomes are journaled in the Cancelled run) and starts nothing; any
// other end cancels them.
func (c *claims) endLocked(key types.NamespacedName, cur *claimState, phase exagentv1.RunPhase) {
	if phase == exagentv1.PhaseCancelled {
		cur.stopped = true
		return
	}
	cur.cancel(errClaimGone)
	delete(c.runs, key)
}

// attempt is the attempt whose jobs may still answer for a stopped
// (cancelled) claim of run uid; 0 when there is none.
func (c *claims) attempt(key types.NamespacedName, uid types.UID) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.runs[key]; cur != nil && cur.uid == uid {
		return cur.fence.Attempt
	}
	return 0
}

// gone cancels every job of run uid, which no longer exists ("" for
// whatever run the name holds: it was not found).
func (c *claims) gone(key types.NamespacedName, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.runs[key]; cur != nil && (uid == "" || cur.uid == uid) {
		cur.cancel(errRunGone)
		delete(c.runs, key)
	}
}

// context is the life of the jobs dispatched under fence for run uid.
func (c *claims) context(key types.NamespacedName, uid types.UID, f loop.Fence) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.runs[key]; cur != nil && cur.uid == uid && cur.fence == f {
		return cur.ctx
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errClaimGone)
	return ctx
}

// ready tells whether a job of run uid dispatched under fence may start
// now: the claim is still that attempt's and its lease has more than
// margin left.
func (c *claims) ready(key types.NamespacedName, uid types.UID, f loop.Fence, now time.Time, margin time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.runs[key]
	switch {
	case cur == nil || cur.uid != uid:
		return errRunGone
	case cur.fence != f || cur.stopped:
		return errClaimGone
	case cur.lease.Sub(now) <= margin:
		return &staleLeaseError{left: cur.lease.Sub(now), margin: margin}
	}
	return nil
}

// staleLeaseError is a job refused because the lease it runs under has
// too little time left: the claim is still this process's, so the owner
// takes the intent back (loop.NotStarted) and begins it again under the
// lease its next commit extends.
type staleLeaseError struct {
	left, margin time.Duration
}

func (e *staleLeaseError) Error() string {
	return fmt.Sprintf("the lease has %s left, less than the safety margin %s", e.left.Round(time.Millisecond), e.margin)
}

// startMargin is how much lease a job needs left to start: enough for the
// owner to renew it while the IO runs, and a little clock skew.
func startMargin(lease time.Duration) time.Duration {
	return min(lease/4, 5*time.Second)
}
