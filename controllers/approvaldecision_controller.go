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
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
	"github.com/exagent-io/exagent/tools"
)

// +kubebuilder:rbac:groups=exagent.io,resources=approvaldecisions,verbs=get;list;watch
// +kubebuilder:rbac:groups=exagent.io,resources=approvaldecisions/status,verbs=get;update
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// DecisionVerifier re-checks that a decision's stamped actor may decide on
// the run. A denial is an error for which authz.IsDenied is true; any other
// error is transient.
type DecisionVerifier interface {
	Verify(ctx context.Context, d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun, agent *exagentv1.Agent) error
}

// SARVerifier is the production verifier: authz.VerifyDecision, i.e. a
// SubjectAccessReview for the approve/resolve verb on agents/approval plus
// the identities that never decide (the run's own ServiceAccount, Manager)
// and the Agent's policy (approvers, forbidSelfApproval). With a Signer, a
// decision that did not go through the admission webhook for this very run
// is rejected too, and a run's spec.requestedBy counts only when sealed.
type SARVerifier struct {
	Client client.Client
	Signer *authz.Signer
	// Manager is the manager's own identity (username).
	Manager string
	// Reader reads a child run's ancestors (past the cache); Client when nil.
	Reader client.Reader
}

// Verify implements DecisionVerifier.
func (v SARVerifier) Verify(ctx context.Context, d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun, agent *exagentv1.Agent) error {
	return authz.VerifyDecision(ctx, v.Client, d, run, agent, authz.WithSigner(v.Signer), authz.WithManager(v.Manager), authz.WithReader(v.Reader))
}

// ApprovalDecisionReconciler applies decisions to runs. It re-verifies the
// actor even though admission did (a bypassed webhook must not let a
// decision through), applies the engine's Decide with CAS and writes the
// outcome on the decision: Applied with the receipt, or Rejected with why.
type ApprovalDecisionReconciler struct {
	Client client.Client
	// APIReader reads the run past the cache: a decision is judged against
	// the run as it is now.
	APIReader client.Reader
	Store     *store.Store
	// Steps shape every status write (Write.Steps).
	Steps    *store.CommitSteps
	Verifier DecisionVerifier
	// Signer, when set, is the admission webhook's seal: the engine then
	// trusts a run's spec.requestedBy only when sealed.
	Signer *authz.Signer
	// Manager is the manager's own identity, which never decides; asked of
	// the apiserver (authz.Self) at setup when empty.
	Manager  string
	Recorder events.EventRecorder
	// Clock is read after the SubjectAccessReview, right before the engine
	// decides: a slow review cannot carry a decision past an expiry.
	Clock clock.PassiveClock
	Name  string
	// MaxConcurrentReconciles bounds the workers.
	MaxConcurrentReconciles int
	// MaxTranscriptBytes is --max-transcript-bytes, as the run controller
	// has it: a decision's engine caps transcripts as the run's does.
	MaxTranscriptBytes int64
	// Callbacks makes NewCallback's URLs, as the run controller does.
	Callbacks *loop.CallbackIssuer
	// Tools, when set, gives a decision the mcp listings the manager has
	// (cached, no refresh): an edited call of an mcp tool is checked against
	// its server's schema, and a run-wide approval binds its fingerprint.
	Tools *tools.Registry
	// Runs, when set, is this manager's run controller: a decision that
	// makes its run ready to resume is committed together with the
	// resume (resumeDecided). Nil: the decision is committed alone.
	Runs resumer
}

// SetupWithManager registers the controller.
func (r *ApprovalDecisionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Name == "" {
		r.Name = "approvaldecision"
	}
	if r.Manager == "" {
		ctx, cancel := context.WithTimeout(context.Background(), selfTimeout)
		defer cancel()
		self, err := authz.Self(ctx, r.Client)
		if err != nil {
			return fmt.Errorf("the decision controller must know the manager's identity to refuse it as a decider: %w", err)
		}
		r.Manager = self
	}
	if r.Verifier == nil {
		r.Verifier = SARVerifier{Client: r.Client, Signer: r.Signer, Manager: r.Manager, Reader: r.APIReader}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		For(&exagentv1.ApprovalDecision{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1)}).
		Complete(quietConflicts{controller: r.Name, next: r})
}

// selfTimeout bounds the set-up SelfSubjectReview.
const selfTimeout = 30 * time.Second

// decide loads the decision (see loadDecision for fresh), verifies it and
// applies it to the run.
func (r *ApprovalDecisionReconciler) decide(ctx context.Context, key types.NamespacedName, fresh bool) (*decisionScope, error) {
	dsc, err := r.loadDecision(ctx, key, fresh)
	if err != nil || dsc == nil {
		return nil, err
	}
	ctx = logf.IntoContext(ctx, logf.FromContext(ctx).WithValues("run", dsc.d.Spec.RunRef.Name, "decision", dsc.d.Spec.Decision))
	for _, phase := range []decisionPhase{r.verify, r.checkRun, r.apply} {
		if err := phase(ctx, dsc); err != nil {
			return nil, err
		}
		if dsc.result != "" {
			break
		}
	}
	return dsc, nil
}

// Reconcile follows the skeleton: load, decide (verify, apply to the run
// with CAS), then one write of the decision's status.
func (r *ApprovalDecisionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dsc, err := r.decide(ctx, req.NamespacedName, false)
	if err != nil {
		return ctrl.Result{}, err
	}
	if dsc == nil {
		return ctrl.Result{}, nil
	}
	if dsc.result == exagentv1.DecisionRejected && !dsc.fresh && !dsc.wrote {
		// A rejection is final: it is never made on cached copies of the
		// run and the Agent, which may be behind. Judge again on fresh reads
		// (unless the rejection came with a write: ending a corrupt run).
		if dsc, err = r.decide(ctx, req.NamespacedName, true); err != nil || dsc == nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.writeResult(ctx, dsc); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the result of decision %s: %w", req.NamespacedName, err)
	}
	r.publishDecision(dsc)
	return ctrl.Result{}, nil
}
