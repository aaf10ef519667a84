package webhook

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// The validating webhook's matchCondition skips UPDATEs that leave spec as it
// was (finalizers, labels, annotations): its checks read only spec, so the
// narrowing is exact, and the manager's own metadata writes do not depend on
// the webhook being reachable.
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-agent,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agents,verbs=create;update,versions=v1alpha1,name=vagent.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"matchConditions":[{"name":"create-or-spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

// AgentWebhook validates Agents.
type AgentWebhook struct{}

var _ admission.Validator[*exagentv1.Agent] = &AgentWebhook{}

// ValidateCreate validates a new Agent.
func (w *AgentWebhook) ValidateCreate(_ context.Context, a *exagentv1.Agent) (admission.Warnings, error) {
	return nil, invalid(agentGK, a.Name, ValidateAgent(a, nil))
}

// ValidateUpdate validates a changed Agent.
func (w *AgentWebhook) ValidateUpdate(_ context.Context, old, a *exagentv1.Agent) (admission.Warnings, error) {
	return nil, invalid(agentGK, a.Name, ValidateAgent(a, old))
}

// ValidateDelete allows deletes (the webhook is not registered for them).
func (w *AgentWebhook) ValidateDelete(context.Context, *exagentv1.Agent) (admission.Warnings, error) {
	return nil, nil
}
