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
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// The virtual subresource a decision is authorized on (api/v1alpha1).
const (
	ApprovalResource    = exagentv1.ApprovalResource
	ApprovalSubresource = exagentv1.ApprovalSubresource
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// ReviewAccess asks the apiserver whether actor may use verb on
// agents/approval named agentName in namespace. extra, when known (at
// admission), is passed on so that authorizers that read it see the same
// user the request came from.
func ReviewAccess(ctx context.Context, c client.Client, actor exagentv1.Actor, extra map[string]authenticationv1.ExtraValue,
	verb, namespace, agentName string) error {
	sar := &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   actor.Username,
			UID:    actor.UID,
			Groups: slices.Clone(actor.Groups),
			Extra:  toExtra(extra),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace:   namespace,
				Verb:        verb,
				Group:       exagentv1.GroupVersion.Group,
				Resource:    ApprovalResource,
				Subresource: ApprovalSubresource,
				Name:        agentName,
			},
		},
	}
	if err := c.Create(ctx, sar); err != nil {
		return fmt.Errorf("creating SubjectAccessReview for %q (verb %q on %s/%s %q in namespace %q): %w",
			actor.Username, verb, ApprovalResource, ApprovalSubresource, agentName, namespace, err)
	}
	if sar.Status.Allowed && !sar.Status.Denied {
		return nil
	}
	logf.FromContext(ctx).V(1).Info("SubjectAccessReview denied a decision",
		"user", actor.Username, "verb", verb, "namespace", namespace, "agent", agentName,
		"reason", sar.Status.Reason, "evaluationError", sar.Status.EvaluationError)
	return denied(CheckRBAC, fmt.Sprintf(
		"you are not allowed to %s runs of agent %q: missing verb %q on %s/%s",
		verb, agentName, verb, ApprovalResource, ApprovalSubresource))
}

func toExtra(in map[string]authenticationv1.ExtraValue) map[string]authorizationv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authorizationv1.ExtraValue(slices.Clone(v))
	}
	return out
}
