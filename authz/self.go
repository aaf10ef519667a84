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
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create

// Self asks the apiserver who c authenticates as (a SelfSubjectReview): the
// manager's own identity, which never decides on a run. Taken from the
// credentials the manager really uses — a ServiceAccount token in a pod, a
// kubeconfig user on a laptop — rather than from a flag that could drift
// from them.
func Self(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the apiserver who the manager is (SelfSubjectReview): %w", err)
	}
	name := review.Status.UserInfo.Username
	if name == "" {
		return "", fmt.Errorf("the SelfSubjectReview returned no username for the manager")
	}
	return name, nil
}
