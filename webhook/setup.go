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
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/shard"
)

// Option tunes SetupWithManager.
type Option func(*settings)

type settings struct {
	signer     *authz.Signer
	manager    string
	namespaces served.Namespaces
	placer     *shard.Placer
}

// WithSigner makes the mutating webhooks sign what they stamp (see
// authz.Signer): every admitted decision, for the run it names, and every
// created run's spec.requestedBy. Pass the same Signer to the controller
// (authz.WithSigner) so that a decision that did not go through this webhook
// is rejected even if its spec.actor names a real approver, and so that
// forbidSelfApproval refuses a requester nobody stamped.
func WithSigner(s *authz.Signer) Option {
	return func(o *settings) { o.signer = s }
}

// WithManagerIdentity names the manager's own identity (its username),
// which never decides on a run and alone creates AgentRunSegments. Without it, SetupWithManager asks the
// apiserver who the manager's credentials authenticate as (authz.Self).
func WithManagerIdentity(username string) Option {
	return func(o *settings) { o.manager = username }
}

// WithNamespaces names the namespaces the manager serves
// (--watch-namespaces; every one when not given): runs and decisions
// created anywhere else are refused (refuseUnserved), and only runs in
// them are stamped admitted (AnnotationAdmittedBy).
func WithNamespaces(n served.Namespaces) Option {
	return func(o *settings) { o.namespaces = n }
}

// WithPlacer places every new run on a shard (--shards): admission stamps
// its exagent.io/shard label (stampShard). Decisions always carry their
// run's label, placer or not.
func WithPlacer(p *shard.Placer) Option {
	return func(o *settings) { o.placer = p }
}

// selfTimeout bounds the start-up SelfSubjectReview.
const selfTimeout = 30 * time.Second

// SetupWithManager registers every exagent admission webhook with the
// manager's webhook server. Reads go straight to the apiserver (not the
// cache): a decision is judged against the run as it is now, and decisions
// are rare enough that one GET each costs nothing.
func SetupWithManager(mgr ctrl.Manager, opts ...Option) error {
	var o settings
	for _, opt := range opts {
		opt(&o)
	}
	if o.manager == "" {
		ctx, cancel := context.WithTimeout(context.Background(), selfTimeout)
		defer cancel()
		self, err := authz.Self(ctx, mgr.GetClient())
		if err != nil {
			return fmt.Errorf("the decision webhook must know the manager's identity to refuse it as a decider: %w", err)
		}
		o.manager = self
	}
	// The conversion webhook (v1alpha1 ⇄ v1beta1, api/v1alpha1's
	// Convertibles) on the same server and certificate as admission; the
	// builder would register it too, but only for the kinds that have an
	// admission webhook, and AgentBudget has none.
	mgr.GetWebhookServer().Register(ConvertPath, conversion.NewWebhookHandler(mgr.GetScheme(), mgr.GetConverterRegistry()))
	decisions := &ApprovalDecisionWebhook{Reader: mgr.GetAPIReader(), Client: mgr.GetClient(), Signer: o.signer, Manager: o.manager, Namespaces: o.namespaces}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.ApprovalDecision{}).
		WithDefaulterCustomPath(servedPath("mutate", "approvaldecision")).
		WithDefaulter(decisions).
		WithValidatorCustomPath(servedPath("validate", "approvaldecision")).
		WithValidator(decisions).
		Complete(); err != nil {
		return fmt.Errorf("registering ApprovalDecision webhooks: %w", err)
	}
	runs := &AgentRunWebhook{Signer: o.signer, Manager: o.manager, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespaces: o.namespaces, Placer: o.placer}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.AgentRun{}).
		WithDefaulterCustomPath(servedPath("mutate", "agentrun")).
		WithDefaulter(runs).
		WithValidatorCustomPath(servedPath("validate", "agentrun")).
		WithValidator(runs).
		Complete(); err != nil {
		return fmt.Errorf("registering AgentRun webhooks: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.Agent{}).
		WithValidatorCustomPath(servedPath("validate", "agent")).
		WithValidator(&AgentWebhook{Client: mgr.GetClient()}).
		Complete(); err != nil {
		return fmt.Errorf("registering Agent webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.Conversation{}).
		WithValidatorCustomPath(servedPath("validate", "conversation")).
		WithValidator(&ConversationWebhook{Reader: mgr.GetAPIReader()}).
		Complete(); err != nil {
		return fmt.Errorf("registering Conversation webhook: %w", err)
	}
	schedules := &AgentScheduleWebhook{Signer: o.signer, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespaces: o.namespaces}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.AgentSchedule{}).
		WithDefaulterCustomPath(servedPath("mutate", "agentschedule")).
		WithDefaulter(schedules).
		WithValidatorCustomPath(servedPath("validate", "agentschedule")).
		WithValidator(schedules).
		Complete(); err != nil {
		return fmt.Errorf("registering AgentSchedule webhooks: %w", err)
	}
	triggers := &AgentTriggerWebhook{Signer: o.signer, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespaces: o.namespaces}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.AgentTrigger{}).
		WithDefaulterCustomPath(servedPath("mutate", "agenttrigger")).
		WithDefaulter(triggers).
		WithValidatorCustomPath(servedPath("validate", "agenttrigger")).
		WithValidator(triggers).
		Complete(); err != nil {
		return fmt.Errorf("registering AgentTrigger webhooks: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &exagentv1.AgentRunSegment{}).
		WithValidatorCustomPath(servedPath("validate", "agentrunsegment")).
		WithValidator(&AgentRunSegmentWebhook{Manager: o.manager}).
		Complete(); err != nil {
		return fmt.Errorf("registering AgentRunSegment webhook: %w", err)
	}
	return nil
}

// ConvertPath is where the conversion webhook is served; every CRD's
// spec.conversion.webhook.clientConfig names it.
const ConvertPath = "/convert"

// servedPath is an admission webhook's path. It keeps the v1alpha1 name
// v0.3.0 registered, so that while an upgrade rolls out the webhook
// configurations of either release reach the managers of both; the
// configurations register v1beta1 and match v1alpha1 requests as
// Equivalent (the apiserver converts them first).
func servedPath(verb, kind string) string {
	return "/" + verb + "-exagent-io-v1alpha1-" + kind
}
