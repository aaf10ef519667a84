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

package app

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// deciderRole is the ClusterRole of config/rbac that grants each deciding
// verb, with create on approvaldecisions.
var deciderRole = map[string]string{
	exagentv1.VerbApprove: "exagent-approver",
	exagentv1.VerbResolve: "exagent-resolver",
	exagentv1.VerbAnswer:  "exagent-approver",
}

// mayI asks the apiserver whether the current user may do what attrs say
// (a SelfSubjectAccessReview, which every authenticated user may create).
// nil when the question itself failed: no answer is not a refusal.
func mayI(ctx context.Context, c client.Client, attrs authorizationv1.ResourceAttributes) *bool {
	review := &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
	}
	if err := c.Create(ctx, review); err != nil {
		return nil
	}
	allowed := review.Status.Allowed
	return &allowed
}

// deciderAttributes is the verb a decision of kind needs on run's Agent's
// approval subresource (docs/architecture.md §2, who may decide).
func deciderAttributes(run *exagentv1.AgentRun, kind exagentv1.DecisionKind) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{
		Namespace:   run.Namespace,
		Verb:        exagentv1.DeciderVerb(kind),
		Group:       exagentv1.GroupVersion.Group,
		Resource:    exagentv1.ApprovalResource,
		Subresource: exagentv1.ApprovalSubresource,
		Name:        run.Spec.AgentRef.Name,
	}
}

// checkMayDecide asks, before a decision of kind on run is sent, whether
// RBAC lets the current user create it and holds the deciding verb on the
// run's Agent. A refusal is one line naming what is missing and the
// ClusterRole that grants it — instead of the apiserver's bare "cannot
// create resource" or the webhook's refusal. What RBAC allows but the
// Agent's policy narrows (policy.approvers, forbidSelfApproval) is still
// admission's to refuse, with its own reason; a question that fails is no
// answer, and the create goes on.
func checkMayDecide(ctx context.Context, c client.Client, run *exagentv1.AgentRun, kind exagentv1.DecisionKind) error {
	verb := exagentv1.DeciderVerb(kind)
	role := deciderRole[verb]
	create := authorizationv1.ResourceAttributes{Namespace: run.Namespace, Verb: "create",
		Group: exagentv1.GroupVersion.Group, Resource: "approvaldecisions"}
	if allowed := mayI(ctx, c, create); allowed != nil && !*allowed {
		return fmt.Errorf("you are not allowed to create approvaldecisions.exagent.io in namespace %q, and every decision is one: "+
			"missing verb \"create\" on approvaldecisions; ClusterRole %s grants it (with %s on agents/approval), in a RoleBinding there",
			run.Namespace, role, verb)
	}
	if allowed := mayI(ctx, c, deciderAttributes(run, kind)); allowed != nil && !*allowed {
		return fmt.Errorf("you are not allowed to %s runs of agent %q: missing verb %q on %s/%s (resourceName %q) in namespace %q; "+
			"ClusterRole %s grants it, in a RoleBinding there",
			verb, run.Spec.AgentRef.Name, verb, exagentv1.ApprovalResource, exagentv1.ApprovalSubresource,
			run.Spec.AgentRef.Name, run.Namespace, role)
	}
	return nil
}
