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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
	"github.com/exagent-io/exagent/tools"
)

// scope is what one reconcile of a run knows and decides. Phase functions
// fill it; only Reconcile commits it.
type scope struct {
	key   types.NamespacedName
	now   time.Time
	run   *exagentv1.AgentRun
	agent *exagentv1.Agent
	env   *loop.Env

	// status is the working copy of the run's status; changed says whether
	// it differs from what was read.
	status  loop.Status
	changed bool
	// ownedFence is this process's claim on the run as read: the commit is
	// an owner's commit and the store fences it.
	ownedFence *loop.Fence
	// fence is the claim this process holds after the transitions (owned,
	// or claimed in this reconcile).
	fence     *loop.Fence
	results   []ioResult
	inFlight  int
	action    loop.Action
	overrides []metav1.Condition
	notes     []note
	// noIO is set when the run's Agent is not usable: clocks and results
	// still apply, no new IO starts.
	noIO bool
	// requeueAfter, when set, replaces the computed wake-up.
	requeueAfter time.Duration
	stop         bool
	// chain is the run's verified segment chain, once read (chainRead).
	chain     []segment.Segment
	chainRead bool
	// childEnded: the commit records a child's end (its call's outcome and
	// its usage charged).
	childEnded bool
	// unlockBudget releases the namespace's budget lock the gate took for
	// this claim (agentbudget_gate.go); nil when none is held.
	unlockBudget func()
}

// releaseBudget releases the budget lock, if held.
func (sc *scope) releaseBudget() {
	if sc.unlockBudget != nil {
		sc.unlockBudget()
		sc.unlockBudget = nil
	}
}

// phaseFunc is the one signature of the reconcile phases. A phase sets
// sc.stop when the phases after it have nothing to do.
type phaseFunc func(ctx context.Context, sc *scope) error

func (sc *scope) set(s loop.Status) {
	sc.status = s
	sc.changed = true
}

// load reads the run (from the cache, or past it with the APIReader) and
// its Agent, returning nil when there is nothing to do: the run is gone or
// has ended.
func (r *AgentRunReconciler) load(ctx context.Context, key types.NamespacedName, reader client.Reader) (*scope, error) {
	run := &exagentv1.AgentRun{}
	if err := reader.Get(ctx, key, run); err != nil {
		if apierrors.IsNotFound(err) {
			if r.mem.leaving.has(key) {
				return nil, nil // moved or deleted: leftCache decides, and keeps what a hand-over commits
			}
			// Its children, segments and decisions are the garbage
			// collector's: each has the run as owner.
			r.mem.forget(key, r.Clock.Now())
			r.objectWaits.release(key)
			return nil, nil
		}
		return nil, fmt.Errorf("getting run %s: %w", key, err)
	}
	run = r.Store.Fresher(run)
	if run.Status.Phase.IsTerminal() {
		r.mem.ended(key)
		r.objectWaits.release(key)
		return nil, errors.Join(r.settleEnded(ctx, key, run), r.endChildren(ctx, run))
	}
	sc := &scope{key: key, now: r.Clock.Now(), run: run, status: *run.Status.DeepCopy()}
	agent := &exagentv1.Agent{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting agent of run %s: %w", key, err)
		}
		return sc, nil
	}
	sc.agent = agent
	return sc, nil
}

// checkAgent finds the run's Agent usable, or puts the run in the
// no-IO mode: the Agent is missing (GitOps may apply the run first, or it
// was deleted), has a tool kind this version cannot run, or an invalid
// configuration — or the run's own spec changed after it was created. The
// run shows Ready=False with the reason, and the
// Agent's watch wakes it when that changes. Without a usable Agent the
// run keeps its clocks and its results (docs/architecture.md §4.7): deadline and
// approval expiry still fire, an owner still commits the results of IO in
// flight and renews its lease while it waits for them, then hands the run
// back; no new IO starts. The run's own spec is all those need, so an
// empty Agent stands in for the missing one.
func (r *AgentRunReconciler) checkAgent(ctx context.Context, sc *scope) error {
	reason, msg := r.unusableAgent(ctx, sc)
	if reason == "" && sc.run.Generation <= 1 {
		return nil
	}
	if sc.run.Generation > 1 {
		// The spec changed after creation (generation counts spec changes):
		// admission checked what the run may do (its ServiceAccount, its
		// Agent, its limits) when it was created, so a changed run starts
		// no IO — whatever changed it, e.g. a cluster without the policy
		// that refuses the change.
		reason, msg = exagentv1.ReasonSpecChanged, fmt.Sprintf("the run's spec changed after it was created (generation %d): a run does only what it was admitted to do, so it starts no more model or tool calls; delete it and create a new AgentRun (and install the ValidatingAdmissionPolicy exagent-agentrun-spec, which refuses such a change: docs/install.md)", sc.run.Generation)
		sc.env = nil // evaluated against its own spec only, as without an Agent
	} else if agentReason, note := agentNotReady(sc.agent); agentReason != "" && agentReason != reason {
		msg += note // the Agent's check names the cause (e.g. the header Secret an MCP listing needs)
	}
	sc.overrides = append(sc.overrides, notReady(reason, msg, sc))
	sc.noIO = true
	if sc.env != nil {
		return nil // valid, but a tool kind cannot run: only startable phases get here
	}
	env, err := r.envConfig().env(sc.run, nil, envExtras{})
	if err != nil {
		sc.stop = true // a malformed run spec (admission refuses it): nothing can be evaluated
		return nil
	}
	sc.env = env
	return nil
}

// unusableAgent returns why the run's Agent cannot drive it ("" when it
// can), setting sc.env when the Agent's configuration is valid.
func (r *AgentRunReconciler) unusableAgent(ctx context.Context, sc *scope) (reason, message string) {
	if sc.agent == nil {
		return exagentv1.ReasonAgentNotFound,
			fmt.Sprintf("agent %q not found in namespace %q", sc.run.Spec.AgentRef.Name, sc.key.Namespace)
	}
	listings, mcpDown := r.mcpListings(ctx, sc)
	env, err := r.envConfig().env(sc.run, sc.agent, envExtras{mcp: listings,
		childLimits:  r.childLimits(ctx, sc),   // agentrun_delegate.go
		waitsRefused: r.waitsRefused(ctx, sc)}) // wait_caps.go
	if err != nil {
		return exagentv1.ReasonInvalidConfiguration, err.Error()
	}
	sc.env = env
	if mcpDown != "" {
		return exagentv1.ReasonMCPServerUnavailable, mcpDown
	}
	if startable(sc.status.Phase) {
		for i := range sc.agent.Spec.Tools {
			if err := tools.Supported(&sc.agent.Spec.Tools[i]); err != nil {
				return exagentv1.ReasonToolKindNotSupported, err.Error()
			}
		}
	}
	return "", ""
}

// startable phases are those where no IO has begun for the current attempt.
func startable(p exagentv1.RunPhase) bool {
	return p == "" || p == exagentv1.PhaseQueued || p == exagentv1.PhaseApproved
}

// start turns a new run into a Queued one.
func (r *AgentRunReconciler) start(_ context.Context, sc *scope) error {
	if sc.status.Phase != "" || sc.noIO {
		return nil
	}
	next, err := loop.Start(sc.status, sc.env, sc.now)
	if err != nil {
		return r.failPermanent(sc, err)
	}
	sc.set(next)
	return nil
}

// expire applies the deadline and approval expiry to a run nobody owns.
func (r *AgentRunReconciler) expire(_ context.Context, sc *scope) error {
	next, changed, err := loop.Expire(sc.status, sc.env, sc.now)
	if err != nil {
		return fmt.Errorf("expire: %w", err)
	}
	if changed {
		sc.set(next)
		sc.note(exagentv1.EventRunFailed, warning, "run %s: %s", next.Phase, next.Message)
		sc.stop = true
	}
	return nil
}

// wake closes the waits of a Waiting run whose time came (loop.Wake), after
// expire: a run at its deadline ends Expired instead. The woken run is
// Queued (or Approved) and the claim that follows in this very turn sends
// its next model request with the waits' results. A cached summary of the
// run (store.CacheOptions) is enough to see that nothing is due; the
// commit of a change is computed again from the run read past the cache.
func (r *AgentRunReconciler) wake(_ context.Context, sc *scope) error {
	if sc.status.Phase != exagentv1.PhaseWaiting {
		return nil
	}
	next, changed, err := loop.Wake(sc.status, sc.env, sc.now)
	if err != nil {
		return fmt.Errorf("wake: %w", err)
	}
	if !changed {
		return nil // nothing due: observeObjects, next, stops a run still Waiting
	}
	if store.IsSummary(sc.run) {
		return store.ErrSummary // woken: computed again, at once, from the run read past the cache
	}
	sc.set(next)
	if next.Phase == exagentv1.PhaseWaiting {
		return nil // another call still waits: observeObjects looks at its objects and stops
	}
	sc.note(exagentv1.EventRunWoken, normal, "%s", next.Message)
	return nil
}

// recover settles a Running run. This process's claim is its own to keep:
// with a live lease, or with a lapsed one while it still tracks the run's
// IO or holds its results (a live owner commits what it holds; the commit
// extends the lease and its CAS proves nobody took the run meanwhile).
// Another holder's claim is waited out, and a clock-skew grace past it;
// then the run is recovered (Uncertain when a tool intent has no outcome).
// Recovery is for dead owners: the only claim of this process it
// recovers is one whose IO it no longer tracks (a job the stop dropped).
func (r *AgentRunReconciler) recover(ctx context.Context, sc *scope) error {
	if sc.status.Phase != exagentv1.PhaseRunning || loop.AwaitingChildren(sc.status) {
		return nil // a run whose children work has no owner to recover from
	}
	c := sc.status.Claim
	if c != nil && c.Holder == r.Holder {
		f := loop.Fence{Holder: c.Holder, Attempt: c.Attempt}
		if sc.now.Before(c.LeaseExpiresAt.Time) || r.mem.inbox.tracks(sc.key) {
			sc.ownedFence, sc.fence = &f, &f
			if !sc.now.Before(c.LeaseExpiresAt.Time) {
				next, err := loop.Extend(sc.status, sc.env, f, sc.now)
				if err != nil {
					return fmt.Errorf("taking back the lapsed lease: %w", err)
				}
				logf.FromContext(ctx).Info("took back this process's lapsed lease: its IO is still tracked", "attempt", c.Attempt)
				sc.set(next)
			}
			return nil
		}
	} else if c != nil {
		if until := c.LeaseExpiresAt.Add(r.SkewGrace); sc.now.Before(until) {
			sc.requeueAfter = until.Sub(sc.now) + 20*time.Millisecond
			sc.stop = true
			return nil
		}
	}
	next, err := loop.Recover(sc.status, sc.env, sc.now)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	logf.FromContext(ctx).Info("recovered a run whose lease expired", "to", next.Phase, "message", next.Message)
	sc.set(next)
	if next.Phase == exagentv1.PhaseUncertain {
		sc.note(exagentv1.EventOutcomeUncertain, warning, "%s", next.Message)
		sc.stop = true
	}
	return nil
}

// claim makes this process the owner of a Queued or Approved run. A run
// whose Agent definition or model changed since it started does not resume.
func (r *AgentRunReconciler) claim(_ context.Context, sc *scope) error {
	if sc.fence != nil {
		return nil
	}
	if p := sc.status.Phase; p != exagentv1.PhaseQueued && p != exagentv1.PhaseApproved || sc.noIO {
		sc.stop = true // AwaitingApproval or Uncertain: a human decides next; or no usable Agent
		return nil
	}
	if err := loop.CheckDrift(sc.status, sc.env); err != nil {
		reason := exagentv1.ReasonDefinitionChanged
		if e, ok := loop.AsError(err); ok && e.Reason != "" {
			reason = e.Reason
		}
		sc.overrides = append(sc.overrides, notReady(reason, err.Error(), sc))
		sc.stop = true
		return nil
	}
	from := sc.status.Phase
	next, fence, err := loop.Claim(sc.status, sc.env, r.Holder, sc.now)
	if err != nil {
		return r.failPermanent(sc, err)
	}
	sc.set(next)
	sc.fence = &fence
	if from == exagentv1.PhaseApproved {
		sc.note(exagentv1.EventRunResumed, normal, "claimed by %s (attempt %d)", fence.Holder, fence.Attempt)
	}
	return nil
}

// drive records the results that came back for this attempt, then asks the
// engine for the next action, whose intent the commit records.
func (r *AgentRunReconciler) drive(ctx context.Context, sc *scope) error {
	if sc.fence == nil {
		return nil
	}
	sc.results, sc.inFlight = r.mem.inbox.take(sc.key)
	ended, err := r.applyResults(ctx, sc, sc.results)
	switch {
	case loop.IsKind(err, loop.KindStaleFence):
		return err
	case err != nil:
		return r.failPermanent(sc, err)
	case ended:
		sc.noteEnd(sc.status)
		return nil
	}
	if sc.status.Phase != exagentv1.PhaseRunning {
		return nil
	}
	if sc.noIO {
		return r.driveWithoutAgent(sc)
	}
	if err := r.hydrate(ctx, sc); err != nil || sc.stop {
		return err
	}
	before := sc.status
	env, budgetWait, err := r.budgetStepHold(ctx, sc)
	if err != nil {
		return err
	}
	next, act, err := loop.Step(sc.status, env, *sc.fence, sc.now)
	if err != nil {
		if loop.IsKind(err, loop.KindStaleFence) {
			return err
		}
		return r.failPermanent(sc, err)
	}
	if act.Kind != loop.ActWait {
		sc.set(next)
	} else if !equalStatus(next, sc.status) {
		sc.set(next)
	}
	sc.action = act
	if err := r.prepareIO(ctx, sc, before); err != nil || sc.stop {
		return err
	}
	switch act.Kind {
	case loop.ActPause:
		for _, a := range act.Approvals {
			reason := exagentv1.EventApprovalRequested
			if a.IsQuestion() {
				reason = exagentv1.EventInputRequested
			}
			sc.note(reason, normal, "%s", notify.ApprovalRequestedMessage(sc.run, &next, a)) // actionable Event
		}
		sc.note(exagentv1.EventRunPaused, normal, "%s", next.Message)
	case loop.ActFinish, loop.ActFail:
		sc.noteEnd(next)
	case loop.ActWait:
		r.renewIfDue(sc)
	case loop.ActWaitUntil:
		// The claim is released in this commit: no worker, lease or
		// goroutine holds the run while it waits; the clock wakes it.
		sc.note(exagentv1.EventRunWaiting, normal, "%s", next.Message)
	case loop.ActHold:
		sc.note(exagentv1.EventBudgetExhausted, warning, "%s", next.Message)
		sc.requeueAfter = budgetWait
	}
	return nil
}

// driveWithoutAgent is the owner's turn when the Agent is not usable: the
// results were recorded; while IO is still in flight the lease is renewed,
// and once none is, the run is handed back (Queued or Approved) to wait
// for its Agent without holding a claim.
func (r *AgentRunReconciler) driveWithoutAgent(sc *scope) error {
	if sc.inFlight > 0 {
		r.renewIfDue(sc)
		return nil
	}
	next, err := loop.Release(sc.status, sc.env, *sc.fence, sc.now)
	if err != nil {
		if loop.IsKind(err, loop.KindStaleFence) {
			return err
		}
		// A call of this attempt is Started but no job of it is tracked:
		// its outcome is unknown. The lease is left to run out and the
		// recovery makes it Uncertain, as for a dead owner.
		return nil
	}
	sc.set(next)
	return nil
}

// applyResults records, in order, the IO results of sc's attempt on its
// status. A result counts only when it is this attempt's (fence) of this
// very run (UID): a run deleted and re-created under the same name starts
// its attempts at 1 again, so only the UID keeps an older run's result
// out. A result the journal does not expect (its intent was closed or
// asked again meanwhile) is dropped; any other error stops and is
// returned. ended tells whether a result ended the run (phase no longer
// Running): the results after it are not applied. The reconcile (drive)
// and the hand-back at the stop (releaseOne) both apply results here.
func (r *AgentRunReconciler) applyResults(ctx context.Context, sc *scope, results []ioResult) (ended bool, err error) {
	for _, res := range results {
		if res.fence != *sc.fence || res.uid != sc.run.UID {
			continue // an older attempt's (or an older run's) result: it never confirms
		}
		next, err := r.record(sc, res)
		switch {
		case loop.IsKind(err, loop.KindNotPending) || loop.IsKind(err, loop.KindConflict):
			logf.FromContext(ctx).Info("dropping a result the journal does not expect", "reason", err.Error())
			continue
		case err != nil:
			return false, err
		}
		sc.set(next)
		if next.Phase != exagentv1.PhaseRunning {
			return true, nil
		}
	}
	return false, nil
}

// record applies one result of this attempt.
func (r *AgentRunReconciler) record(sc *scope, res ioResult) (loop.Status, error) {
	switch {
	case res.notStarted != nil:
		return loop.NotStarted(sc.status, sc.env, *sc.fence, res.notStarted.callID, sc.now)
	case res.delegated != nil:
		return r.recordDelegated(sc, res.delegated)
	case res.tool != nil:
		return loop.RecordOutcome(sc.status, sc.env, *sc.fence, *res.tool, sc.now)
	case res.model != nil:
		return loop.RecordModelResponse(sc.status, sc.env, *sc.fence, *res.model, sc.now)
	case isScriptExhausted(res.modelErr):
		return loop.Fail(sc.status, exagentv1.ReasonScriptExhausted, res.modelErr.Error(), sc.now)
	case res.modelErr != nil:
		_, note := agentNotReady(sc.agent) // the Agent's own check may say what to fix
		msg := res.modelErr.Error() + note
		if reason, final := finalModelError(res.modelErr); final {
			return loop.Fail(sc.status, reason, msg, sc.now)
		}
		return loop.RecordModelFailure(sc.status, sc.env, *sc.fence, msg, sc.now)
	default:
		msg := "model request failed"
		if res.modelErr != nil {
			msg = res.modelErr.Error()
		}
		return loop.RecordModelFailure(sc.status, sc.env, *sc.fence, msg, sc.now)
	}
}

// renewIfDue asks for a commit while IO is in flight and half the lease is
// gone: every owner commit extends the lease (commit, loop.Extend), so the
// commit is the renewal. With nothing in flight the lease is left to run
// out: renewals are writes.
func (r *AgentRunReconciler) renewIfDue(sc *scope) {
	if sc.inFlight == 0 || sc.status.Claim == nil || sc.now.Before(renewAt(sc.status.Claim, sc.env)) {
		return
	}
	sc.changed = true
}

// failPermanent ends the run for an engine error that says it cannot go
// on; other errors are returned for a retry.
func (r *AgentRunReconciler) failPermanent(sc *scope, err error) error {
	e, ok := loop.AsError(err)
	if !ok || !loop.IsPermanent(err) {
		return err
	}
	next, ferr := loop.Fail(sc.status, e.Reason, e.Message, sc.now)
	if ferr != nil {
		return errors.Join(err, ferr)
	}
	sc.set(next)
	sc.action = loop.Action{}
	sc.noteEnd(next)
	sc.stop = true
	return nil
}
