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

package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/served"
)

// Only CREATE is intercepted, by both webhooks (identities are stamped and
// checked once); an UPDATE of the spec is refused by the admission policy
// (config/policy/approvaldecision-spec.yaml), and metadata changes never
// depend on the webhook being reachable. DELETE is allowed — the receipt of
// an applied decision lives in the run.
// +kubebuilder:webhook:path=/mutate-exagent-io-v1alpha1-approvaldecision,mutating=true,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=approvaldecisions,verbs=create,versions=v1beta1,name=mapprovaldecision.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-approvaldecision,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=approvaldecisions,verbs=create,versions=v1beta1,name=vapprovaldecision.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10

// +kubebuilder:rbac:groups=exagent.io,resources=agents;agentruns,verbs=get

// ApprovalDecisionWebhook stamps and checks ApprovalDecisions.
type ApprovalDecisionWebhook struct {
	// Reader reads runs and Agents; the manager's APIReader (uncached).
	Reader client.Reader
	// Client creates SubjectAccessReviews.
	Client client.Client
	// Signer, when set, signs admitted decisions (for the run they name) and
	// is verified on create.
	Signer *authz.Signer
	// Manager is the manager's own identity: it never decides.
	Manager string
	// Namespaces are those the manager serves; a decision elsewhere is
	// refused (refuseUnserved). The zero value serves every namespace.
	Namespaces served.Namespaces
}

var (
	_ admission.Defaulter[*exagentv1.ApprovalDecision] = &ApprovalDecisionWebhook{}
	_ admission.Validator[*exagentv1.ApprovalDecision] = &ApprovalDecisionWebhook{}
)

// Default stamps spec.actor from the authenticated user, defaults
// spec.operationID to the object's name (or, with metadata.generateName,
// where admission runs before the name exists, to one derived from the
// admission request's UID), makes the run it names its owner (SetRunOwner)
// and, with a Signer, signs the result for that run as it exists now (its
// UID): a decision never carries over to a run deleted and re-created under
// the same name.
// A client-written actor that differs is refused here, before anything else
// sees it.
func (w *ApprovalDecisionWebhook) Default(ctx context.Context, d *exagentv1.ApprovalDecision) error {
	req, err := requester(ctx)
	if err != nil || !isCreate(req) {
		return err
	}
	if err := refuseUnserved(w.Namespaces, approvalDecisionGR, d.Name, req.Namespace); err != nil {
		return err
	}
	stamped := authz.ActorFromUserInfo(req.UserInfo)
	if d.Spec.Actor != nil {
		if ferr := checkStamped(field.NewPath("spec", "actor"), d.Spec.Actor, stamped); ferr != nil {
			return invalid(approvalDecisionGK, d.Name, field.ErrorList{ferr})
		}
	}
	d.Spec.Actor = &stamped
	if d.Spec.OperationID == "" {
		d.Spec.OperationID = defaultOperationID(d, req)
	}
	// A missing run is sealed with no UID and given no owner: validation
	// refuses the decision (spec.runRef.name not found), and no run has an
	// empty UID.
	run := &exagentv1.AgentRun{}
	if err := w.Reader.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.RunRef.Name}, run); err != nil && !apierrors.IsNotFound(err) {
		return apierrors.NewInternalError(fmt.Errorf("reading AgentRun %s/%s to admit the decision: %w", d.Namespace, d.Spec.RunRef.Name, err))
	}
	d.SetRunOwner(run) // the garbage collector deletes it with the run
	stampDecisionShard(d, run)
	if w.Signer == nil {
		return nil
	}
	// Last: the signature covers the spec as it will be stored.
	return w.Signer.Sign(d, run.UID)
}

// ValidateCreate admits a decision only when its author may decide on its
// target now: shape, stamped actor, target decidable, then authz.
func (w *ApprovalDecisionWebhook) ValidateCreate(ctx context.Context, d *exagentv1.ApprovalDecision) (admission.Warnings, error) {
	if err := invalid(approvalDecisionGK, d.Name, ValidateApprovalDecision(d, nil)); err != nil {
		return nil, err
	}
	req, err := requester(ctx)
	if err != nil {
		return nil, err
	}
	if err := refuseUnserved(w.Namespaces, approvalDecisionGR, d.Name, req.Namespace); err != nil {
		return nil, err
	}
	// Checked again although Default stamped it: another mutating webhook
	// may run after ours, or ours may be missing from the configuration.
	if ferr := checkStamped(field.NewPath("spec", "actor"), d.Spec.Actor, authz.ActorFromUserInfo(req.UserInfo)); ferr != nil {
		return nil, invalid(approvalDecisionGK, d.Name, field.ErrorList{ferr})
	}

	run := &exagentv1.AgentRun{}
	if err := w.Reader.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.RunRef.Name}, run); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, invalid(approvalDecisionGK, d.Name, field.ErrorList{
				field.NotFound(field.NewPath("spec", "runRef", "name"), d.Spec.RunRef.Name)})
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading AgentRun %s/%s: %w", d.Namespace, d.Spec.RunRef.Name, err))
	}
	agent := &exagentv1.Agent{}
	if err := w.Reader.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, apierrors.NewInternalError(fmt.Errorf("reading Agent %s/%s: %w", d.Namespace, run.Spec.AgentRef.Name, err))
		}
		agent = nil // authz denies after the RBAC check: the policy is unknown
	}

	// Who may decide comes before whether the target is decidable, so that
	// someone without the verb learns nothing about the run's approvals.
	err = authz.VerifyDecision(ctx, w.Client, d, run, agent,
		authz.WithExtra(req.UserInfo.Extra), authz.WithSigner(w.Signer), authz.WithManager(w.Manager), authz.WithReader(w.Reader))
	if err != nil {
		if authz.IsDenied(err) {
			logf.FromContext(ctx).Info("decision denied", "decision", d.Name, "run", run.Name,
				"actor", d.Spec.Actor.Username, "check", authz.DeniedCheck(err), "message", err.Error())
			return nil, apierrors.NewForbidden(approvalDecisionGR, d.Name, err)
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("authorizing decision: %w", err))
	}
	if err := invalid(approvalDecisionGK, d.Name, ValidateDecisionRun(d, run)); err != nil {
		return nil, err
	}
	if err := invalid(approvalDecisionGK, d.Name, ValidateDecisionTarget(d, run)); err != nil {
		return nil, err
	}
	if err := invalid(approvalDecisionGK, d.Name, ValidateDecisionEdit(d, run, agent)); err != nil {
		return nil, err
	}
	if err := invalid(approvalDecisionGK, d.Name, ValidateDecisionAnswer(d, run)); err != nil {
		return nil, err
	}
	return nil, nil
}

// ValidateUpdate admits every update: the webhook is registered for
// creates only, and the admission policy refuses a changed spec.
func (w *ApprovalDecisionWebhook) ValidateUpdate(context.Context, *exagentv1.ApprovalDecision, *exagentv1.ApprovalDecision) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete allows deletes (the webhook is not registered for them).
func (w *ApprovalDecisionWebhook) ValidateDelete(context.Context, *exagentv1.ApprovalDecision) (admission.Warnings, error) {
	return nil, nil
}

// defaultOperationID is the object's name. A decision created with
// metadata.generateName has no name yet when admission runs, so it gets an
// ID unique to this create request instead: two such decisions are two
// operations, as their two generated names would have been.
func defaultOperationID(d *exagentv1.ApprovalDecision, req admission.Request) string {
	if d.Name != "" {
		return d.Name
	}
	id := d.GenerateName + string(req.UID)
	if len(id) > exagentv1.MaxOperationIDLength {
		id = string(req.UID)
	}
	return id
}
