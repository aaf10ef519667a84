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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// WithReader makes VerifyDecision read a child run's ancestors (and their
// Agents) with r instead of the client it was given.
func WithReader(r client.Reader) Option {
	return func(o *options) { o.reader = r }
}

// Ancestors reads a child run's ancestors, parent first, with their Agents
// (nil when an Agent does not exist), following spec.delegation and
// checking each parent's UID: a run re-created under a parent's name is
// not an ancestor. A root run has none. An ancestor that is gone is a
// *DeniedError: nobody can show that its approvers would agree.
func Ancestors(ctx context.Context, r client.Reader, run *exagentv1.AgentRun) ([]loop.Ancestor, error) {
	var out []loop.Ancestor
	cur := run
	for cur.Spec.Delegation != nil {
		if len(out) >= exagentv1.MaxDelegationDepth {
			return nil, denied(CheckAncestors, fmt.Sprintf("run %s has more than %d ancestors", run.Name, exagentv1.MaxDelegationDepth))
		}
		ref := cur.Spec.Delegation.Parent
		parent := &exagentv1.AgentRun{}
		err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}, parent)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && string(parent.UID) != ref.UID):
			return nil, denied(CheckAncestors, fmt.Sprintf(
				"run %s is a child of run %s (uid %s), which is gone: its approvers cannot be checked", cur.Name, ref.Name, ref.UID))
		case err != nil:
			return nil, fmt.Errorf("reading run %s, an ancestor of %s: %w", ref.Name, run.Name, err)
		}
		a := loop.Ancestor{Run: parent}
		agent := &exagentv1.Agent{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: parent.Spec.AgentRef.Name}, agent); err == nil {
			a.Agent = agent
		} else if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading agent %s of run %s, an ancestor of %s: %w", parent.Spec.AgentRef.Name, ref.Name, run.Name, err)
		}
		out = append(out, a)
		cur = parent
	}
	return out, nil
}

// ancestorChecks applies, for a decision on a child run, every ancestor's
// policy: its approvers and forbidSelfApproval (the root's requester), and
// the identities that never decide on it (loop.AuthorizeAncestors). A
// Cancel only stops work: an ancestor whose Agent is gone does not block it.
func ancestorChecks(d *exagentv1.ApprovalDecision, ancestors []loop.Ancestor, o options, actor exagentv1.Actor) error {
	ids := make([]loop.Identities, len(ancestors))
	for i := range ancestors {
		a := &ancestors[i]
		if a.Agent == nil && d.Spec.Decision != exagentv1.DecisionCancel {
			return denied(CheckAgent, fmt.Sprintf("agent %q of run %s, an ancestor of this run, not found: its policy says who may decide",
				a.Run.Spec.AgentRef.Name, a.Run.Name))
		}
		ids[i] = RunIdentities(a.Run, WithSigner(o.signer), WithManager(o.manager...))
	}
	err := loop.AuthorizeAncestors(ancestors, ids, actor)
	e, ok := loop.AsError(err)
	if !ok {
		return err
	}
	return CheckPolicyError(e)
}
