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
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/clip"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
	"github.com/exagent-io/exagent/tools"
)

// decisionScope is what one reconcile of a decision knows and decides.
type decisionScope struct {
	// now is read in apply, after the verifier's SubjectAccessReview.
	now   time.Time
	d     *exagentv1.ApprovalDecision
	run   *exagentv1.AgentRun
	agent *exagentv1.Agent

	// fresh says the run and the Agent were read past the cache.
	fresh bool
	// wrote says this reconcile wrote the run: its result stands.
	wrote bool

	result  exagentv1.DecisionPhase
	message string
	receipt *exagentv1.Receipt
}

type decisionPhase func(ctx context.Context, dsc *decisionScope) error

func (dsc *decisionScope) reject(format string, args ...any) {
	dsc.result = exagentv1.DecisionRejected
	dsc.message = fmt.Sprintf(format, args...)
}

// loadDecision reads a decision that has no result yet, its run and the
// run's Agent. A decision whose run is gone is rejected. With fresh, the
// run and the Agent are read past the cache. Otherwise they come from the
// cache — the Agent for the decision, the run only for the review (its
// spec and identity; a waiting run's cached copy is a summary, see
// CacheOptions) — and the run as it is now is read meanwhile (verify): an
// applied decision is judged on it and protected by the CAS on its
// resourceVersion, and a rejection is only ever made on fresh reads
// (Reconcile).
func (r *ApprovalDecisionReconciler) loadDecision(ctx context.Context, key types.NamespacedName, fresh bool) (*decisionScope, error) {
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
	reader := r.APIReader
	if !fresh {
		reader = r.Client
	}
	dsc := &decisionScope{d: d, fresh: fresh}
	run := &exagentv1.AgentRun{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: d.Spec.RunRef.Name}, run); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting run of decision %s: %w", key, err)
		}
		dsc.reject("run %q not found", d.Spec.RunRef.Name)
		return dsc, nil
	}
	if !run.Status.KnownFormat() {
		// A newer release wrote the run's journal: the decision waits,
		// unjudged, for a manager that can read it (docs/upgrading.md).
		if r.Recorder != nil {
			r.Recorder.Eventf(d, run, warning, exagentv1.ReasonUnknownFormat, "Hold",
				"run %s's journal is format %d and this manager reads formats up to %d: the decision waits for a manager that can read it",
				run.Name, run.Status.Format(), exagentv1.JournalFormat)
		}
		return nil, nil
	}
	dsc.run = run
	agent := &exagentv1.Agent{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting agent of decision %s: %w", key, err)
		}
		agent = nil
	}
	dsc.agent = agent
	return dsc, nil
}

// verify re-runs the SubjectAccessReview and the policy check. On a
// cached load the run as it is now is read past the cache meanwhile: the
// review needs only the run's spec and identity, which the cached copy
// has, and the decision is then applied to the fresh run.
func (r *ApprovalDecisionReconciler) verify(ctx context.Context, dsc *decisionScope) error {
	if dsc.result != "" {
		return nil
	}
	var (
		fresh   *exagentv1.AgentRun
		readErr error
		read    chan struct{}
	)
	if !dsc.fresh {
		read = make(chan struct{})
		go func() {
			defer close(read)
			// From the apiserver's watch cache (resourceVersion 0): current
			// within milliseconds and served from memory; a copy behind makes
			// the commit's CAS fail and the decision is judged again.
			run := &exagentv1.AgentRun{}
			if readErr = r.APIReader.Get(ctx, client.ObjectKeyFromObject(dsc.run), run,
				&client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}}); readErr == nil {
				fresh = run
			}
		}()
	}
	err := r.Verifier.Verify(ctx, dsc.d, dsc.run, dsc.agent)
	if read != nil {
		<-read
	}
	switch {
	case authz.IsDenied(err):
		dsc.reject("not authorized: %v", err)
		return nil
	case err != nil:
		return fmt.Errorf("verifying the decision's actor: %w", err)
	}
	if read == nil {
		return nil
	}
	switch {
	case apierrors.IsNotFound(readErr):
		dsc.reject("run %q not found", dsc.run.Name)
	case readErr != nil:
		return fmt.Errorf("reading run %s: %w", dsc.run.Name, readErr)
	case fresh.UID != dsc.run.UID:
		// Re-created under the same name since the cache saw it: the
		// review was of another run. Reconcile judges again on fresh reads.
		dsc.reject("run %q was re-created while the decision was verified", dsc.run.Name)
	default:
		dsc.run = fresh
	}
	return nil
}

// checkRun rejects a decision bound to another run than the one its name
// finds now (spec.runUID): the run was deleted and re-created under the
// same name since the decider looked, and a call under the same approval
// ID may be another call. Admission refuses it first; this holds when the
// webhook was bypassed or the run was re-created after admission. It runs
// on the run apply decides on (verify has swapped in the fresh read), and
// a rejection on a cached read is judged again on a fresh one (Reconcile).
func (r *ApprovalDecisionReconciler) checkRun(_ context.Context, dsc *decisionScope) error {
	if dsc.result != "" {
		return nil
	}
	if msg := dsc.d.Spec.StaleRunUID(string(dsc.run.UID)); msg != "" {
		dsc.reject("%s", msg)
	}
	return nil
}

// apply runs the engine's Decide on the fresh run and commits it with CAS.
// A conflict is retried from a fresh read: the engine's idempotency and
// conflict rules then decide (same operation → its receipt; another
// decision of the same approval → Rejected).
//
// The clock is read here, after the verifier's SubjectAccessReview: the
// engine checks expiry and deadline against the instant it decides, so a
// review that took long cannot let a decision through an expiry that
// passed meanwhile.
func (r *ApprovalDecisionReconciler) apply(ctx context.Context, dsc *decisionScope) error {
	if dsc.result != "" {
		return nil
	}
	cancel := dsc.d.Spec.Decision == exagentv1.DecisionCancel
	if dsc.agent == nil && !cancel {
		dsc.reject("agent %q not found in namespace %q: its policy says who may decide on this run",
			dsc.run.Spec.AgentRef.Name, dsc.run.Namespace)
		return nil
	}
	env, err := decisionEnv(dsc, envConfig{valueBytes: r.Steps.ValueBytes(), maxTranscriptBytes: r.MaxTranscriptBytes, callbacks: r.Callbacks}, r.listings(ctx, dsc))
	if err != nil {
		dsc.reject("the run's configuration is invalid: %v", err)
		return nil
	}
	cmd := commandOf(dsc.d)
	cmd.Identities = authz.RunIdentities(dsc.run, authz.WithSigner(r.Signer), authz.WithManager(r.Manager))
	if dsc.run.Spec.Delegation != nil {
		// The engine checks every ancestor's policy too (loop.AuthorizeAncestors).
		ancestors, err := authz.Ancestors(ctx, r.APIReader, dsc.run)
		switch {
		case authz.IsDenied(err):
			dsc.reject("not authorized: %v", err)
			return nil
		case err != nil:
			return fmt.Errorf("reading the run's ancestors: %w", err)
		}
		cmd.Ancestors = ancestors
		for _, a := range ancestors {
			cmd.AncestorIdentities = append(cmd.AncestorIdentities,
				authz.RunIdentities(a.Run, authz.WithSigner(r.Signer), authz.WithManager(r.Manager)))
		}
	}
	if loop.NeedSealedReceipts(dsc.run.Status, cmd) {
		// The operation may have been applied at a past revision, its
		// receipt since sealed: a repeat must find it (sealedReceipts).
		sealed, err := r.sealedReceipts(ctx, dsc.run)
		switch {
		case err != nil && !loop.IsPermanent(err):
			return err
		case err != nil && !cancel:
			dsc.reject("the run's sealed receipts cannot be read: %v", err)
			return nil
		}
		cmd.Sealed = sealed // a Cancel stops a run whatever its chain holds
	}
	dsc.now = r.Clock.Now()
	next, receipt, err := loop.Decide(dsc.run.Status, env, cmd, dsc.now)
	if err != nil {
		e, ok := loop.AsError(err)
		if !ok {
			return fmt.Errorf("deciding: %w", err)
		}
		if e.Reason == exagentv1.ReasonCorruptStatus {
			return r.failCorrupt(ctx, dsc, e)
		}
		dsc.reject("%v", err)
		return nil
	}
	if !equalStatus(next, dsc.run.Status) {
		written, err := r.commitDecided(ctx, dsc, next)
		if u, ok := store.AsUnstorable(err); ok {
			// Retrying the same write could only be refused again.
			dsc.reject("the run's status cannot take this decision: %v (%s); the run is unchanged", u, u.Reason)
			return nil
		}
		if err != nil {
			if errors.Is(err, store.ErrConflict) || apierrors.IsConflict(err) {
				logf.FromContext(ctx).V(1).Info("run changed while deciding; retrying on a fresh read")
			}
			return err
		}
		dsc.run = written
	}
	dsc.result = exagentv1.DecisionApplied
	dsc.message = fmt.Sprintf("applied: run %s is %s", dsc.run.Name, dsc.run.Status.Phase)
	dsc.receipt = &receipt
	return nil
}

// commitDecided commits the decided status. A run the decision makes
// ready to resume is resumed in the same write by the run controller
// (resumeDecided: claim and first intent, then dispatch); any other
// transition is committed alone, and the run's watch wakes its owner.
func (r *ApprovalDecisionReconciler) commitDecided(ctx context.Context, dsc *decisionScope, next loop.Status) (*exagentv1.AgentRun, error) {
	event := func(written *exagentv1.AgentRun) {
		// The run's Event describes the run's commit: sent right after it,
		// so it precedes whatever the run does next.
		if r.Recorder == nil {
			return
		}
		r.Recorder.Eventf(written, dsc.d, normal, exagentv1.EventDecisionApplied, exagentv1.EventDecisionApplied, "%s by %s (%s): run is %s",
			dsc.d.Spec.Decision, actorName(dsc.d.Spec.Actor), dsc.d.Name, written.Status.Phase)
		// A decision that ends the run (a Deny with onDeny Stop, a Cancel)
		// is the run's end: the run's own turn finds it ended and says
		// nothing, so the end-of-run Event is sent here, once.
		if s := written.Status; s.Phase.IsTerminal() && !dsc.run.Status.Phase.IsTerminal() {
			r.Recorder.Eventf(written, dsc.d, warning, exagentv1.EventRunFailed, exagentv1.EventRunFailed, "run %s (%s): %s", s.Phase, s.Reason, s.Message)
		}
	}
	if r.Runs != nil && next.Phase == exagentv1.PhaseApproved && dsc.run.Status.Phase == exagentv1.PhaseAwaitingApproval {
		written, ok, err := r.Runs.resumeDecided(ctx, dsc.run, next, dsc.now, event)
		if _, refused := store.AsUnstorable(err); ok && !refused {
			return written, err
		}
		// Stopping, or the resumed turn's write is refused for good: the
		// decision is committed alone, and the run's own turn meets (and
		// ends the run on) that refusal.
	}
	written, err := r.Store.Commit(ctx, store.Write{Run: dsc.run, Status: next, Now: dsc.now, Steps: r.Steps.All(store.HeldSinks(dsc.agent))})
	if err != nil {
		return nil, err
	}
	event(written)
	return written, nil
}

// failCorrupt ends a run whose stored status contradicts itself: no
// decision can be applied to it, and no worker would ever resume it. The
// decision is rejected with the reason; the run ends Failed, CorruptStatus.
func (r *ApprovalDecisionReconciler) failCorrupt(ctx context.Context, dsc *decisionScope, e *loop.Error) error {
	if dsc.run.Status.Phase.IsTerminal() {
		dsc.reject("%v", e)
		return nil
	}
	failed, err := loop.Fail(dsc.run.Status, e.Reason, e.Message, dsc.now)
	if err != nil {
		return fmt.Errorf("failing run %s with a corrupt status: %w", dsc.run.Name, err)
	}
	written, err := r.Store.Commit(ctx, store.Write{Run: dsc.run, Status: failed, Now: dsc.now, Steps: r.Steps.All(store.HeldSinks(dsc.agent))})
	if err != nil {
		return err
	}
	dsc.run, dsc.wrote = written, true
	logf.FromContext(ctx).Info("ended a run whose status is corrupt", "message", e.Message)
	if r.Recorder != nil {
		r.Recorder.Eventf(written, dsc.d, warning, exagentv1.EventRunFailed, exagentv1.EventRunFailed, "%s: %s", e.Reason, e.Message)
	}
	dsc.reject("the run's status is corrupt, so it was ended Failed (%s): %s", e.Reason, e.Message)
	return nil
}

// sealedReceipts reads the receipts the run's segments hold (the chain
// verified, as before any IO; its segments are cached by content hash).
func (r *ApprovalDecisionReconciler) sealedReceipts(ctx context.Context, run *exagentv1.AgentRun) ([]exagentv1.Receipt, error) {
	if r.Store.Segments() == nil {
		return nil, nil
	}
	chain, err := r.Store.Segments().Chain(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("reading the sealed receipts of run %s: %w", run.Name, err)
	}
	return segment.SealedReceipts(chain), nil
}

func commandOf(d *exagentv1.ApprovalDecision) loop.DecisionCmd {
	cmd := loop.DecisionCmd{
		Name: d.Name, OperationID: d.Spec.OperationID, Decision: d.Spec.Decision,
		ApprovalID: d.Spec.ApprovalID, CallID: d.Spec.CallID, PayloadHash: d.Spec.PayloadHash,
		Revision: d.Spec.Revision, Reason: d.Spec.Reason, Outcome: d.Spec.Outcome, Evidence: d.Spec.Evidence,
		Arguments: d.Spec.EditedArguments(), Scope: d.Spec.Scope,
		Answer: d.Spec.AnswerJSON(), Action: d.Spec.Action,
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
	d.Status.Message = truncate(dsc.message, exagentv1.MaxMessageBytes)
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
		r.Recorder.Eventf(dsc.d, nil, warning, exagentv1.EventDecisionRejected, exagentv1.EventDecisionRejected, "%s", dsc.message)
		return
	}
	r.Recorder.Eventf(dsc.d, dsc.run, normal, exagentv1.EventDecisionApplied, exagentv1.EventDecisionApplied, "%s", dsc.message)
}

func actorName(a *exagentv1.Actor) string {
	if a == nil {
		return "<no actor>"
	}
	return a.Username
}

// truncate bounds a message to n bytes (internal/clip), marking the cut.
func truncate(s string, n int) string { return clip.Bytes(s, n, clip.Ellipsis) }

// listings are the mcp listings the manager knows for the run's Agent
// (no refresh: a decision does no IO), for an Approve that edits a call or
// approves it for the run; nil for every other decision.
func (r *ApprovalDecisionReconciler) listings(ctx context.Context, dsc *decisionScope) map[string]*loop.MCPListing {
	s := &dsc.d.Spec
	if r.Tools == nil || dsc.agent == nil || !hasMCP(&dsc.agent.Spec) || s.Decision != exagentv1.DecisionApprove ||
		(s.Arguments == nil && s.Scope != exagentv1.ScopeRun) {
		return nil
	}
	listings, _ := r.Tools.MCPListings(ctx, dsc.run.Namespace, &dsc.agent.Spec, tools.MCPNeed{Cached: true})
	return listings
}

// decisionEnv is the engine's view of the run for a decision. A Cancel
// applies whatever state the Agent is in (missing or invalid): it needs
// only the run's own spec, so an empty Agent stands in for it.
func decisionEnv(dsc *decisionScope, c envConfig, mcp map[string]*loop.MCPListing) (*loop.Env, error) {
	if dsc.agent != nil {
		env, err := c.env(dsc.run, dsc.agent, envExtras{mcp: mcp})
		if err == nil || dsc.d.Spec.Decision != exagentv1.DecisionCancel {
			return env, err
		}
	}
	return c.env(dsc.run, nil, envExtras{})
}
