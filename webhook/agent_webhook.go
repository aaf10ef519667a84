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

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// The validating webhook's matchCondition skips UPDATEs that leave spec as it
// was (finalizers, labels, annotations): its checks read only spec, so the
// narrowing is exact, and the manager's own metadata writes do not depend on
// the webhook being reachable.
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-agent,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agents,verbs=create;update,versions=v1beta1,name=vagent.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"matchConditions":[{"name":"create-or-spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

// AgentWebhook validates Agents.
type AgentWebhook struct {
	// Client creates the SubjectAccessReviews that authorize the names
	// added to spec.serviceAccountNames (checkServiceAccountNames).
	Client client.Client
}

var _ admission.Validator[*exagentv1.Agent] = &AgentWebhook{}

// ValidateCreate validates a new Agent.
func (w *AgentWebhook) ValidateCreate(ctx context.Context, a *exagentv1.Agent) (admission.Warnings, error) {
	return w.validate(ctx, a, nil)
}

// ValidateUpdate validates a changed Agent.
func (w *AgentWebhook) ValidateUpdate(ctx context.Context, old, a *exagentv1.Agent) (admission.Warnings, error) {
	return w.validate(ctx, a, old)
}

func (w *AgentWebhook) validate(ctx context.Context, a, old *exagentv1.Agent) (admission.Warnings, error) {
	errs := ValidateAgent(a, old)
	if len(errs) == 0 {
		// Only an Agent sound otherwise costs the reviews.
		more, err := w.checkServiceAccountNames(ctx, a, old)
		if err != nil {
			return nil, err
		}
		errs = more
	}
	return nil, invalid(agentGK, a.Name, errs)
}

// ValidateDelete allows deletes (the webhook is not registered for them).
func (w *AgentWebhook) ValidateDelete(context.Context, *exagentv1.Agent) (admission.Warnings, error) {
	return nil, nil
}
