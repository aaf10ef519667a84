package authz

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Option tunes VerifyDecision.
type Option func(*options)

type options struct {
	extra map[string]authenticationv1.ExtraValue
	seal  *Seal
}

// WithExtra passes the request's user extra to the SubjectAccessReview. The
// admission webhook has it; the controller's re-check does not (extra is not
// stored in the decision) and checks the stamped username, uid and groups.
func WithExtra(extra map[string]authenticationv1.ExtraValue) Option {
	return func(o *options) { o.extra = extra }
}

// WithSeal makes VerifyDecision reject a decision that does not carry its
// seal from the admission webhook (see Seal): the defence against a webhook
// bypassed while clients write spec.actor themselves. A nil seal is ignored.
func WithSeal(s *Seal) Option {
	return func(o *options) { o.seal = s }
}

// VerifyDecision decides whether d's stamped actor may decide on run:
// SubjectAccessReview for verb approve (Approve, Deny, Cancel) or resolve
// (Resolve) on agents/approval named after run.spec.agentRef.name in the
// run's namespace, then agent's policy.approvers, then forbidSelfApproval.
//
// agent may be nil when the Agent does not exist; the decision is then
// denied after the RBAC check, because the policy that says who may decide
// is unknown. A *DeniedError (see IsDenied) means reject; any other error
// means the apiserver could not be asked — retry, never allow.
func VerifyDecision(ctx context.Context, c client.Client, d *exagentv1.ApprovalDecision,
	run *exagentv1.AgentRun, agent *exagentv1.Agent, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if d.Spec.Actor == nil || d.Spec.Actor.Username == "" {
		return denied(CheckActor,
			"the decision has no spec.actor: it was not admitted by the exagent admission webhook")
	}
	if d.Namespace != run.Namespace || d.Spec.RunRef.Name != run.Name {
		return denied(CheckActor, fmt.Sprintf("the decision names run %s/%s, not %s/%s",
			d.Namespace, d.Spec.RunRef.Name, run.Namespace, run.Name))
	}
	if o.seal != nil {
		if err := o.seal.Verify(d); err != nil {
			return err
		}
	}
	actor := *d.Spec.Actor
	agentName := run.Spec.AgentRef.Name
	if err := ReviewAccess(ctx, c, actor, o.extra, d.Spec.Verb(), run.Namespace, agentName); err != nil {
		return err
	}
	if agent == nil || agent.Name != agentName || agent.Namespace != run.Namespace {
		return denied(CheckAgent, fmt.Sprintf(
			"agent %q not found in namespace %q: its policy says who may decide on this run", agentName, run.Namespace))
	}
	return CheckPolicy(agent.Spec.Policy, &run.Spec, actor)
}
