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

package controllers

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serviceAccountUser is the username the apiserver gives namespace/name.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// eventsDenied asks the apiserver (SubjectAccessReviews) whether the
// ServiceAccount namespace/sa may list and watch core/v1 events in ns,
// and answers the verbs it may not ("" when it may both). The review
// names the groups the apiserver adds when the manager impersonates the
// ServiceAccount's username, so a grant to system:serviceaccounts:NS
// counts as it will on the watch.
func eventsDenied(ctx context.Context, c client.Client, namespace, sa, ns string) (string, error) {
	denied := ""
	for _, verb := range []string{"list", "watch"} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   serviceAccountUser(namespace, sa),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Resource: "events",
			},
		}}
		if err := c.Create(ctx, sar); err != nil {
			return "", fmt.Errorf("creating a SubjectAccessReview for ServiceAccount %s/%s (%s events in namespace %s): %w",
				namespace, sa, verb, ns, err)
		}
		if !sar.Status.Allowed || sar.Status.Denied {
			if denied != "" {
				denied += " and "
			}
			denied += verb
		}
	}
	return denied, nil
}
