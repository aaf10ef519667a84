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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// MayCreateRuns asks the apiserver (a SubjectAccessReview for user as
// admission authenticated them) whether user may create AgentRuns in
// namespace. A schedule creates runs for the person who set it, so setting
// one needs exactly this right (DESIGN §19). It answers false, with the
// authorizer's reason when it gave one, not an error, when RBAC refuses.
func MayCreateRuns(ctx context.Context, c client.Client, user authenticationv1.UserInfo, namespace string) (bool, string, error) {
	sar := &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user.Username,
			UID:    user.UID,
			Groups: slices.Clone(user.Groups),
			Extra:  toExtra(user.Extra),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace,
				Verb:      "create",
				Group:     exagentv1.GroupVersion.Group,
				Resource:  "agentruns",
			},
		},
	}
	if err := c.Create(ctx, sar); err != nil {
		return false, "", fmt.Errorf("creating SubjectAccessReview for %q (create agentruns in namespace %q): %w", user.Username, namespace, err)
	}
	return sar.Status.Allowed && !sar.Status.Denied, sar.Status.Reason, nil
}
