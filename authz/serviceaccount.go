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
)

// The verbs that let a person name a ServiceAccount as the identity a run's
// builtin tools act as. "use" is served by no Kubernetes API: RBAC alone
// grants it, so a platform team can hand out exactly "may run agents as
// deployer" without "may act as deployer everywhere", which is what
// "impersonate" already is (and so suffices too).
const (
	VerbUseServiceAccount         = "use"
	VerbImpersonateServiceAccount = "impersonate"
)

// MayUseServiceAccount asks the apiserver (SubjectAccessReviews for the
// user as admission authenticated it) whether user may have the
// ServiceAccount namespace/name act for them: verb "use" on
// serviceaccounts/name, else "impersonate". It answers false, not an
// error, when neither is granted.
func MayUseServiceAccount(ctx context.Context, c client.Client, user authenticationv1.UserInfo, namespace, name string) (bool, error) {
	for _, verb := range []string{VerbUseServiceAccount, VerbImpersonateServiceAccount} {
		sar := &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user.Username,
				UID:    user.UID,
				Groups: slices.Clone(user.Groups),
				Extra:  toExtra(user.Extra),
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: namespace,
					Verb:      verb,
					Resource:  "serviceaccounts",
					Name:      name,
				},
			},
		}
		if err := c.Create(ctx, sar); err != nil {
			return false, fmt.Errorf("creating SubjectAccessReview for %q (verb %q on serviceaccounts %q in namespace %q): %w",
				user.Username, verb, name, namespace, err)
		}
		if sar.Status.Allowed && !sar.Status.Denied {
			return true, nil
		}
	}
	return false, nil
}
