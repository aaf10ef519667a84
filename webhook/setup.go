package webhook

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// SetupWithManager registers every exagent admission webhook with the
// manager's webhook server. Reads go straight to the apiserver (not the
// cache): a decision is judged against the run as it is now, and decisions
// are rare enough that one GET each costs nothing.
func SetupWithManager(mgr ctrl.Manager) error {
	reader := mgr.GetAPIReader()
	decisions := &ApprovalDecisionWebhook{Reader: reader, Client: mgr.GetClient()}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.ApprovalDecision{}).
		WithDefaulter(decisions).
		WithValidator(decisions).
		Complete(); err != nil {
		return fmt.Errorf("registering ApprovalDecision webhooks: %w", err)
	}
	runs := &AgentRunWebhook{}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.AgentRun{}).
		WithDefaulter(runs).
		WithValidator(runs).
		Complete(); err != nil {
		return fmt.Errorf("registering AgentRun webhooks: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.Agent{}).
		WithValidator(&AgentWebhook{}).
		Complete(); err != nil {
		return fmt.Errorf("registering Agent webhook: %w", err)
	}
	return nil
}
