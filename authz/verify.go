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

package authz

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// Option tunes VerifyDecision and RunIdentities.
type Option func(*options)

type options struct {
	extra   map[string]authenticationv1.ExtraValue
	signer  *Signer
	manager []string
	reader  client.Reader
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithExtra passes the request's user extra to the SubjectAccessReview. The
// admission webhook has it; the controller's re-check does not (extra is not
// stored in the decision) and checks the stamped username, uid and groups.
func WithExtra(extra map[string]authenticationv1.ExtraValue) Option {
	return func(o *options) { o.extra = extra }
}

// WithSigner makes VerifyDecision reject a decision that does not carry its
// signature from the admission webhook for this very run (see Signer): the defence
// against a webhook bypassed while clients write spec.actor themselves. It
// also makes a run's spec.requestedBy count only when sealed, so that
// forbidSelfApproval fails closed on a requester nobody stamped. A nil signer
// is ignored: spec.actor and spec.requestedBy are then trusted as stored.
func WithSigner(s *Signer) Option {
	return func(o *options) { o.signer = s }
}

// WithManager names the manager's own identity (its username): it never
// decides on a run (docs/architecture.md §13). Empty names are ignored.
func WithManager(usernames ...string) Option {
	return func(o *options) {
		for _, u := range usernames {
			if u != "" {
				o.manager = append(o.manager, u)
			}
		}
	}
}

// RunIdentities is what "who may decide" knows of run beyond its Agent's
// policy: its namespace (which names its own ServiceAccount), the manager's
// identity (WithManager) and, with a signer (WithSigner), whether
// spec.requestedBy carries the admission webhook's signature. The engine's
// Authorize takes it (loop.DecisionCmd.Identities).
func RunIdentities(run *exagentv1.AgentRun, opts ...Option) loop.Identities {
	o := collect(opts)
	ids := loop.Identities{Namespace: run.Namespace, Manager: o.manager}
	if o.signer != nil {
		if err := o.signer.VerifyRequester(run); err != nil {
			ids.RequesterUnverified = err.Error()
		}
	}
	return ids
}

// VerifyDecision decides whether d's stamped actor may decide on run:
// the signature (WithSigner) for this run, a SubjectAccessReview for verb approve
// (Approve, Deny, Cancel) or resolve (Resolve) on agents/approval named
// after run.spec.agentRef.name in the run's namespace, then the identities
// that never decide (the run's own ServiceAccount, the manager — see
// WithManager), agent's policy.approvers, and forbidSelfApproval.
//
// agent may be nil when the Agent does not exist; the decision is then
// denied after the RBAC check, because the policy that says who may decide
// is unknown — except a Cancel, which only ever stops work: RBAC on the
// Agent's name and the identities that never decide are enough for it
// (docs/architecture.md §4.7: a run whose Agent is gone can still be cancelled). A *DeniedError (see IsDenied) means reject; any other error
// means the apiserver could not be asked — retry, never allow.
func VerifyDecision(ctx context.Context, c client.Client, d *exagentv1.ApprovalDecision,
	run *exagentv1.AgentRun, agent *exagentv1.Agent, opts ...Option) error {
	o := collect(opts)
	if d.Spec.Actor == nil || d.Spec.Actor.Username == "" {
		return denied(CheckActor,
			"the decision has no spec.actor: it was not admitted by the exagent admission webhook")
	}
	if d.Namespace != run.Namespace || d.Spec.RunRef.Name != run.Name {
		return denied(CheckActor, fmt.Sprintf("the decision names run %s/%s, not %s/%s",
			d.Namespace, d.Spec.RunRef.Name, run.Namespace, run.Name))
	}
	if o.signer != nil {
		if err := o.signer.Verify(d, run); err != nil {
			return err
		}
	}
	actor := *d.Spec.Actor
	agentName := run.Spec.AgentRef.Name
	if err := ReviewAccess(ctx, c, actor, o.extra, d.Spec.Verb(), run.Namespace, agentName); err != nil {
		return err
	}
	if agent == nil || agent.Name != agentName || agent.Namespace != run.Namespace {
		if d.Spec.Decision != exagentv1.DecisionCancel {
			return denied(CheckAgent, fmt.Sprintf(
				"agent %q not found in namespace %q: its policy says who may decide on this run", agentName, run.Namespace))
		}
		if err := CheckPolicy(exagentv1.PolicySpec{}, &run.Spec, RunIdentities(run, opts...), actor); err != nil {
			return err
		}
	} else if err := checkDecisionPolicy(agent.Spec.Policy, run, d.Spec.ApprovalID, RunIdentities(run, opts...), actor); err != nil {
		return err
	}
	if run.Spec.Delegation == nil {
		return nil
	}
	// A child run's decision must also pass every ancestor's approvers and
	// forbidSelfApproval (docs/architecture.md §5: authority only narrows).
	reader := o.reader
	if reader == nil {
		reader = c
	}
	ancestors, err := Ancestors(ctx, reader, run)
	if err != nil {
		return err
	}
	return ancestorChecks(d, ancestors, o, actor)
}
