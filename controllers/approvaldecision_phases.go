package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/loop"
)

// decisionScope is what one reconcile of a decision knows and decides.
type decisionScope struct {
	now   time.Time
	d     *exagentv1.ApprovalDecision
	run   *exagentv1.AgentRun
	agent *exagentv1.Agent

	result  exagentv1.DecisionPhase
	message string
	receipt *exagentv1.Receipt
}

type decisionPhase func(ctx context.Context, dsc *decisionScope) error

func (dsc *decisionScope) reject(format string, args ...any) {
	dsc.result = exagentv1.DecisionRejected
	dsc.message = fmt.Sprintf(format, args...)
}

// loadDecision reads a decision that has no result yet, its run (past the
// cache) and the run's Agent. A decision whose run is gone is rejected.
func (r *ApprovalDecisionReconciler) loadDecision(ctx context.Context, key types.NamespacedName) (*decisionScope, error) {
	d := &exagentv1.ApprovalDecision{}
	if err := r.Client.Get(ctx, key, d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting decision %s: %w", key, err)
	}
	if d.Status.Phase != "" {
		return nil, nil // decisions are write-once: a result is final
	}
	dsc := &decisionScope{now: r.Clock.Now(), d: d}
	run := &exagentv1.AgentRun{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: d.Spec.RunRef.Name}, run); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting run of decision %s: %w", key, err)
		}
		dsc.reject("run %q not found", d.Spec.RunRef.Name)
		return dsc, nil
	}
	dsc.run = run
	agent := &exagentv1.Agent{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting agent of decision %s: %w", key, err)
		}
		agent = nil
	}
	dsc.agent = agent
	return dsc, nil
}

// verify re-runs the SubjectAccessReview and the policy check.
func (r *ApprovalDecisionReconciler) verify(ctx context.Context, dsc *decisionScope) error {
	if dsc.result != "" {
		return nil
	}
	err := r.Verifier.Verify(ctx, dsc.d, dsc.run, dsc.agent)
	switch {
	case authz.IsDenied(err):
		dsc.reject("not authorized: %v", err)
	case err != nil:
		return fmt.Errorf("verifying the decision's actor: %w", err)
	}
	return nil
}

// apply runs the engine's Decide on the fresh run and commits it with CAS.
// A conflict is retried from a fresh read: the engine's idempotency and
// conflict rules then decide (same operation → its receipt; another
// decision of the same approval → Rejected).
func (r *ApprovalDecisionReconciler) apply(ctx context.Context, dsc *decisionScope) error {
	if dsc.result != "" {
		return nil
	}
	env, err := loop.NewEnv(loop.EnvInput{
		RunUID: string(dsc.run.UID), RunName: dsc.run.Name,
		Agent: &dsc.agent.Spec, AgentGeneration: dsc.agent.Generation, Run: &dsc.run.Spec,
	})
	if err != nil {
		dsc.reject("the run's configuration is invalid: %v", err)
		return nil
	}
	next, receipt, err := loop.Decide(dsc.run.Status, env, commandOf(dsc.d), dsc.now)
	if err != nil {
		if _, ok := loop.AsError(err); ok {
			dsc.reject("%v", err)
			return nil
		}
		return fmt.Errorf("deciding: %w", err)
	}
	if !equalStatus(next, dsc.run.Status) {
		written, err := r.Store.Commit(ctx, dsc.run, next, nil, dsc.now)
		if err != nil {
			if errors.Is(err, ErrConflict) {
				logf.FromContext(ctx).V(1).Info("run changed while deciding; retrying on a fresh read")
			}
			return err
		}
		dsc.run = written
		// The run's Event describes the run's commit: sent right after it,
		// so it precedes whatever the run does next.
		if r.Recorder != nil {
			r.Recorder.Eventf(written, dsc.d, normal, eventDecisionApplied, eventDecisionApplied, "%s by %s (%s): run is %s",
				dsc.d.Spec.Decision, actorName(dsc.d.Spec.Actor), dsc.d.Name, next.Phase)
		}
	}
	dsc.result = exagentv1.DecisionApplied
	dsc.message = fmt.Sprintf("applied: run %s is %s", dsc.run.Name, dsc.run.Status.Phase)
	dsc.receipt = &receipt
	return nil
}

func commandOf(d *exagentv1.ApprovalDecision) loop.DecisionCmd {
	cmd := loop.DecisionCmd{
		Name: d.Name, OperationID: d.Spec.OperationID, Decision: d.Spec.Decision,
		ApprovalID: d.Spec.ApprovalID, CallID: d.Spec.CallID, PayloadHash: d.Spec.PayloadHash,
		Revision: d.Spec.Revision, Reason: d.Spec.Reason, Outcome: d.Spec.Outcome, Evidence: d.Spec.Evidence,
	}
	if d.Spec.Actor != nil {
		cmd.Actor = *d.Spec.Actor
	}
	return cmd
}

// writeResult records the decision's result: an Update of its status with
// the resourceVersion read, so two workers cannot both write one.
func (r *ApprovalDecisionReconciler) writeResult(ctx context.Context, dsc *decisionScope) error {
	d := dsc.d.DeepCopy()
	d.Status.Phase = dsc.result
	d.Status.Message = truncate(dsc.message, 4000)
	d.Status.Receipt = dsc.receipt
	if err := r.Client.Status().Update(ctx, d); err != nil {
		return err
	}
	dsc.d = d
	return nil
}

// publishDecision sends the Events after the writes they describe.
func (r *ApprovalDecisionReconciler) publishDecision(dsc *decisionScope) {
	if r.Recorder == nil {
		return
	}
	if dsc.result == exagentv1.DecisionRejected {
		r.Recorder.Eventf(dsc.d, nil, warning, eventDecisionRejected, eventDecisionRejected, "%s", dsc.message)
		return
	}
	r.Recorder.Eventf(dsc.d, dsc.run, normal, eventDecisionApplied, eventDecisionApplied, "%s", dsc.message)
}

func actorName(a *exagentv1.Actor) string {
	if a == nil {
		return "<no actor>"
	}
	return a.Username
}

// truncate bounds a message to n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
