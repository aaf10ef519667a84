package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/loop"
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
	resumed   bool
	results   []ioResult
	inFlight  int
	action    loop.Action
	overrides []metav1.Condition
	notes     []note
	// requeueAfter, when set, replaces the computed wake-up.
	requeueAfter time.Duration
	stop         bool
}

// phaseFunc is the one signature of the reconcile phases. A phase sets
// sc.stop when the phases after it have nothing to do.
type phaseFunc func(ctx context.Context, sc *scope) error

func (sc *scope) set(s loop.Status) {
	sc.status = s
	sc.changed = true
}

// load reads the run (and its Agent), returning nil when there is nothing
// to do: the run is gone or has ended.
func (r *AgentRunReconciler) load(ctx context.Context, key types.NamespacedName) (*scope, error) {
	run := &exagentv1.AgentRun{}
	if err := r.Client.Get(ctx, key, run); err != nil {
		if apierrors.IsNotFound(err) {
			r.Store.Forget(key)
			r.owned.forget(key)
			r.inbox.take(key)
			return nil, nil
		}
		return nil, fmt.Errorf("getting run %s: %w", key, err)
	}
	run = r.Store.Fresher(run)
	if run.Status.Phase.IsTerminal() {
		r.inbox.take(key) // results of an ended run have nowhere to go
		r.owned.forget(key)
		return nil, nil
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

// checkAgent stops a run that has no usable Agent: missing, with a tool
// kind this version cannot run, or with an invalid configuration. The run
// waits (Ready=False with the reason) and the Agent's watch wakes it.
func (r *AgentRunReconciler) checkAgent(_ context.Context, sc *scope) error {
	if sc.agent == nil {
		sc.overrides = append(sc.overrides, notReady(exagentv1.ReasonAgentNotFound,
			fmt.Sprintf("agent %q not found in namespace %q", sc.run.Spec.AgentRef.Name, sc.key.Namespace), sc))
		sc.stop = true
		return r.expireWithoutAgent(sc)
	}
	if startable(sc.status.Phase) {
		for i := range sc.agent.Spec.Tools {
			if err := tools.Supported(&sc.agent.Spec.Tools[i]); err != nil {
				sc.overrides = append(sc.overrides, notReady(exagentv1.ReasonToolKindNotSupported, err.Error(), sc))
				sc.stop = true
				return nil
			}
		}
	}
	env, err := loop.NewEnv(loop.EnvInput{
		RunUID: string(sc.run.UID), RunName: sc.run.Name,
		Agent: &sc.agent.Spec, AgentGeneration: sc.agent.Generation, Run: &sc.run.Spec,
	})
	if err != nil {
		sc.overrides = append(sc.overrides, notReady(ReasonInvalidConfiguration, err.Error(), sc))
		sc.stop = true
		return nil
	}
	sc.env = env
	return nil
}

// expireWithoutAgent still applies the UTC clocks (deadline, approval
// expiry) to a waiting run whose Agent is gone or not there yet (GitOps may
// apply the run first): they run whatever happens to the template. Only the
// run's own spec matters to Expire, so an empty Agent stands in for the
// missing one.
func (r *AgentRunReconciler) expireWithoutAgent(sc *scope) error {
	switch sc.status.Phase {
	case "", exagentv1.PhaseQueued, exagentv1.PhaseAwaitingApproval, exagentv1.PhaseApproved:
	default:
		// A Running run waits for its Agent to come back before it is
		// recovered: no clock is armed (a lapsed lease must not spin).
		return nil
	}
	env, err := loop.NewEnv(loop.EnvInput{RunUID: string(sc.run.UID), RunName: sc.run.Name,
		Agent: &exagentv1.AgentSpec{}, Run: &sc.run.Spec})
	if err != nil {
		return nil // a malformed run spec: nothing can be evaluated
	}
	sc.env = env
	return r.expire(context.Background(), sc)
}

// startable phases are those where no IO has begun for the current attempt.
func startable(p exagentv1.RunPhase) bool {
	return p == "" || p == exagentv1.PhaseQueued || p == exagentv1.PhaseApproved
}

// start turns a new run into a Queued one.
func (r *AgentRunReconciler) start(_ context.Context, sc *scope) error {
	if sc.status.Phase != "" {
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
		sc.note(eventRunFailed, warning, "run %s: %s", next.Phase, next.Message)
		sc.stop = true
	}
	return nil
}

// recover settles a Running run: this process's live claim becomes the
// fence; another holder's live claim is waited out; an expired lease is
// recovered (Uncertain when a tool intent has no outcome).
func (r *AgentRunReconciler) recover(ctx context.Context, sc *scope) error {
	if sc.status.Phase != exagentv1.PhaseRunning {
		return nil
	}
	c := sc.status.Claim
	if c != nil && sc.now.Before(c.LeaseExpiresAt.Time) {
		if c.Holder == r.Holder {
			sc.ownedFence = &loop.Fence{Holder: c.Holder, Attempt: c.Attempt}
			sc.fence = sc.ownedFence
			return nil
		}
		sc.requeueAfter = c.LeaseExpiresAt.Sub(sc.now) + 20*time.Millisecond
		sc.stop = true
		return nil
	}
	next, err := loop.Recover(sc.status, sc.env, sc.now)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	logf.FromContext(ctx).Info("recovered a run whose lease expired", "to", next.Phase, "message", next.Message)
	sc.set(next)
	if next.Phase == exagentv1.PhaseUncertain {
		sc.note(eventOutcomeUncertain, warning, "%s", next.Message)
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
	if p := sc.status.Phase; p != exagentv1.PhaseQueued && p != exagentv1.PhaseApproved {
		sc.stop = true // AwaitingApproval or Uncertain: a human decides next
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
		sc.resumed = true
		sc.note(eventRunResumed, normal, "claimed by %s (attempt %d)", fence.Holder, fence.Attempt)
	}
	return nil
}

// drive records the results that came back for this attempt, then asks the
// engine for the next action, whose intent the commit records.
func (r *AgentRunReconciler) drive(ctx context.Context, sc *scope) error {
	if sc.fence == nil {
		return nil
	}
	sc.results, sc.inFlight = r.inbox.take(sc.key)
	for _, res := range sc.results {
		if res.fence != *sc.fence {
			continue // an older attempt's result: it never confirms
		}
		next, err := r.record(sc, res)
		switch {
		case loop.IsKind(err, loop.KindStaleFence):
			return err
		case loop.IsKind(err, loop.KindNotPending) || loop.IsKind(err, loop.KindConflict):
			logf.FromContext(ctx).Info("dropping a result the journal does not expect", "reason", err.Error())
			continue
		case err != nil:
			return r.failPermanent(sc, err)
		}
		sc.set(next)
		if next.Phase != exagentv1.PhaseRunning {
			sc.noteEnd(next)
			return nil
		}
	}
	if sc.status.Phase != exagentv1.PhaseRunning {
		return nil
	}
	next, act, err := loop.Step(sc.status, sc.env, *sc.fence, sc.now)
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
	switch act.Kind {
	case loop.ActPause:
		for _, a := range act.Approvals {
			sc.note(eventApprovalRequested, normal, "%s", notify.ApprovalRequestedMessage(sc.run, &next, a)) // notify: actionable Event
		}
		sc.note(eventRunPaused, normal, "%s", next.Message)
	case loop.ActFinish, loop.ActFail:
		sc.noteEnd(next)
	case loop.ActWait:
		r.renewIfDue(sc)
	}
	return nil
}

// record applies one result of this attempt.
func (r *AgentRunReconciler) record(sc *scope, res ioResult) (loop.Status, error) {
	switch {
	case res.tool != nil:
		return loop.RecordOutcome(sc.status, sc.env, *sc.fence, *res.tool, sc.now)
	case res.model != nil:
		return loop.RecordModelResponse(sc.status, sc.env, *sc.fence, *res.model, sc.now)
	case isScriptExhausted(res.modelErr):
		return loop.Fail(sc.status, exagentv1.ReasonScriptExhausted, res.modelErr.Error(), sc.now)
	default:
		msg := "model request failed"
		if res.modelErr != nil {
			msg = res.modelErr.Error()
		}
		return loop.RecordModelFailure(sc.status, sc.env, *sc.fence, msg, sc.now)
	}
}

// renewIfDue extends the lease while IO is in flight and half of it is gone.
// With nothing in flight the lease is left to run out: renewals are writes.
func (r *AgentRunReconciler) renewIfDue(sc *scope) {
	if sc.inFlight == 0 || sc.status.Claim == nil || sc.now.Before(renewAt(sc.status.Claim, sc.env)) {
		return
	}
	next, err := loop.Renew(sc.status, sc.env, *sc.fence, sc.now)
	if err != nil {
		return // a lost fence shows at the commit
	}
	sc.set(next)
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
