package webhook

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/authz"
)

// Option tunes SetupWithManager.
type Option func(*ApprovalDecisionWebhook)

// WithSeal makes the mutating webhook seal every admitted decision (see
// authz.Seal). Pass the same Seal to the controller's authz.VerifyDecision
// (authz.WithSeal) so that a decision that did not go through this webhook
// is rejected even if its spec.actor names a real approver.
func WithSeal(s *authz.Seal) Option {
	return func(w *ApprovalDecisionWebhook) { w.Seal = s }
}

// SetupWithManager registers every exagent admission webhook with the
// manager's webhook server. Reads go straight to the apiserver (not the
// cache): a decision is judged against the run as it is now, and decisions
// are rare enough that one GET each costs nothing.
func SetupWithManager(mgr ctrl.Manager, opts ...Option) error {
	decisions := &ApprovalDecisionWebhook{Reader: mgr.GetAPIReader(), Client: mgr.GetClient()}
	for _, opt := range opts {
		opt(decisions)
	}
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
