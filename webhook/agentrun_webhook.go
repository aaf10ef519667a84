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

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/shard"
)

// The validating webhook's matchCondition skips UPDATEs that leave spec as it
// was (finalizers, labels, annotations): its checks read only spec, so the
// narrowing is exact, and the manager's own metadata writes do not depend on
// the webhook being reachable.
// +kubebuilder:webhook:path=/mutate-exagent-io-v1alpha1-agentrun,mutating=true,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agentruns,verbs=create,versions=v1beta1,name=magentrun.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-agentrun,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agentruns,verbs=create;update,versions=v1beta1,name=vagentrun.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"matchConditions":[{"name":"create-or-spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

// AgentRunWebhook stamps spec.requestedBy and validates AgentRuns.
type AgentRunWebhook struct {
	// Signer, when set, signs the stamped spec.requestedBy (with the rest of
	// the spec), so that the controller can tell a requester admission
	// stamped from one a client wrote past a bypassed webhook.
	Signer *authz.Signer
	// Manager is the manager's own identity: the only creator of runs with
	// spec.delegation (child runs), which carry their root's requestedBy.
	Manager string
	// Client creates the SubjectAccessReviews that authorize
	// spec.serviceAccountName; Reader reads the run's Agent (its
	// spec.serviceAccountNames) past the cache.
	Client client.Client
	Reader client.Reader
	// Namespaces are those the manager serves: a run elsewhere is refused
	// (refuseUnserved). The zero value serves every namespace.
	Namespaces served.Namespaces
	// Placer places new runs on shards (stampShard); nil: none are.
	Placer *shard.Placer
}

var (
	_ admission.Defaulter[*exagentv1.AgentRun] = &AgentRunWebhook{}
	_ admission.Validator[*exagentv1.AgentRun] = &AgentRunWebhook{}
)

// Default stamps spec.requestedBy from the creating user: forbidSelfApproval
// compares deciders against it, so a client must not be able to name
// someone else as the requester. With a Signer, the stamp is sealed
// (authz.Signer.SignRequester, annotation exagent.io/requester-seal).
// Every admitted run, child runs included, is stamped
// exagent.io/admitted-by with the manager's identity (overwriting what a
// client wrote): the sign kubectl approve reads that an exagent manager
// serves the run's namespace.
func (w *AgentRunWebhook) Default(ctx context.Context, run *exagentv1.AgentRun) error {
	req, err := requester(ctx)
	if err != nil || !isCreate(req) {
		return err
	}
	if err := refuseUnserved(w.Namespaces, agentRunGR, run.Name, req.Namespace); err != nil {
		return err
	}
	stampAdmitted(run, w.Manager)
	if err := w.stampConversation(ctx, run); err != nil {
		return err
	}
	stamped := authz.ActorFromUserInfo(req.UserInfo)
	if err := w.stampShard(ctx, run, stamped); err != nil {
		return err
	}
	if run.Spec.Delegation != nil {
		if ferr := w.checkDelegation(run, stamped); ferr != nil {
			return invalid(agentRunGK, run.Name, field.ErrorList{ferr})
		}
		// A child run carries its root's requester, copied by the manager
		// (forbidSelfApproval compares deciders with the root's requester).
		if w.Signer != nil {
			return w.Signer.SignRequester(run)
		}
		return nil
	}
	if w.managerScheduled(run, stamped) || w.managerTriggered(run, stamped) {
		// A schedule's or trigger's run carries the person who last set
		// its spec, copied by the manager (checkScheduled and
		// checkTriggered check it).
		if w.Signer != nil {
			return w.Signer.SignRequester(run)
		}
		return nil
	}
	if w.managerTurn(run, stamped) {
		// A RoundRobin turn the manager created carries the requester of
		// the conversation's first turn, copied by the manager
		// (checkConversation checks it), as a child carries its root's.
		if w.Signer != nil {
			return w.Signer.SignRequester(run)
		}
		return nil
	}
	if run.Spec.RequestedBy != nil {
		if ferr := checkStamped(field.NewPath("spec", "requestedBy"), run.Spec.RequestedBy, stamped); ferr != nil {
			return invalid(agentRunGK, run.Name, field.ErrorList{ferr})
		}
	}
	run.Spec.RequestedBy = &stamped
	if w.Signer != nil {
		// Last: the signature covers the spec as it will be stored.
		return w.Signer.SignRequester(run)
	}
	return nil
}

// ValidateCreate validates the run, that requestedBy is the creating user
// and that the creator may have the run act as its ServiceAccount
// (checkServiceAccount). A requester signature that no longer matches (another mutating webhook
// changed the spec after ours) is only a warning: the run works, but
// forbidSelfApproval will refuse every decider on it.
func (w *AgentRunWebhook) ValidateCreate(ctx context.Context, run *exagentv1.AgentRun) (admission.Warnings, error) {
	errs := ValidateAgentRun(run, nil)
	req, err := requester(ctx)
	if err != nil {
		return nil, err
	}
	if err := refuseUnserved(w.Namespaces, agentRunGR, run.Name, req.Namespace); err != nil {
		return nil, err
	}
	stamped := authz.ActorFromUserInfo(req.UserInfo)
	triggered := w.managerTriggered(run, stamped)
	scheduled := w.managerScheduled(run, stamped) || triggered
	if run.Spec.Delegation != nil {
		if ferr := w.checkDelegation(run, stamped); ferr != nil {
			errs = append(errs, ferr)
		}
	} else if scheduled {
		check := w.checkScheduled
		if triggered {
			check = w.checkTriggered
		}
		ferr, err := check(ctx, run)
		if err != nil {
			return nil, err
		}
		if ferr != nil {
			errs = append(errs, ferr)
		}
	} else if !w.managerTurn(run, stamped) {
		if ferr := checkStamped(field.NewPath("spec", "requestedBy"), run.Spec.RequestedBy, stamped); ferr != nil {
			errs = append(errs, ferr)
		}
	}
	// A schedule's or trigger's ServiceAccount was authorized against its
	// setter when they set it (authorizeSetter); the creator here is the
	// manager.
	if len(errs) == 0 && !scheduled {
		// Only a run sound otherwise costs the Agent read and the reviews.
		ferr, err := w.checkServiceAccount(ctx, req, run)
		if err != nil {
			return nil, err
		}
		if ferr != nil {
			errs = append(errs, ferr)
		}
	}
	if len(errs) == 0 && run.Spec.Delegation == nil {
		// A turn of a conversation (agentrun_conversation.go).
		ferr, err := w.checkConversation(ctx, req, run)
		if err != nil {
			return nil, err
		}
		if ferr != nil {
			errs = append(errs, ferr)
		}
	}
	var warnings admission.Warnings
	if w.Signer != nil {
		if err := w.Signer.VerifyRequester(run); err != nil {
			warnings = append(warnings, fmt.Sprintf("%v (did another mutating webhook change the spec after exagent's?): "+
				"if the run's Agent sets forbidSelfApproval, nobody will be able to decide on it", err))
		}
	}
	return warnings, invalid(agentRunGK, run.Name, errs)
}

// stampAdmitted marks run as admitted by the manager named manager
// (exagentv1.AnnotationAdmittedBy), replacing any value the client set.
// Without a known identity the stamp still says "exagent".
func stampAdmitted(run *exagentv1.AgentRun, manager string) {
	if manager == "" {
		manager = "exagent"
	}
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	run.Annotations[exagentv1.AnnotationAdmittedBy] = manager
}

// ValidateUpdate denies spec changes.
func (w *AgentRunWebhook) ValidateUpdate(_ context.Context, old, run *exagentv1.AgentRun) (admission.Warnings, error) {
	return nil, invalid(agentRunGK, run.Name, ValidateAgentRun(run, old))
}

// ValidateDelete allows deletes (the webhook is not registered for them).
func (w *AgentRunWebhook) ValidateDelete(context.Context, *exagentv1.AgentRun) (admission.Warnings, error) {
	return nil, nil
}

// checkDelegation refuses spec.delegation from anyone but the manager: it
// places the run in a tree (its limits, its ancestors' approvers, the
// root's requester), which only the manager's delegation calls may do.
func (w *AgentRunWebhook) checkDelegation(run *exagentv1.AgentRun, creator exagentv1.Actor) *field.Error {
	if w.Manager != "" && creator.Username == w.Manager {
		return nil
	}
	return field.Forbidden(field.NewPath("spec", "delegation"), fmt.Sprintf(
		"is set only by the exagent manager when a delegation call creates a child run; %q may not create child runs: remove the field",
		creator.Username))
}
