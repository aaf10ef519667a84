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

package served

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Right is one thing the manager must be allowed in every served namespace.
type Right struct {
	Group, Resource, Verb string
}

func (r Right) String() string {
	res := r.Resource
	if r.Group != "" {
		res += "." + r.Group
	}
	return r.Verb + " " + res
}

// Rights are what the manager cannot serve a namespace without: the
// informers' list and watch, the status commits, segments, Events, the
// Secrets an Agent names and the run's ServiceAccount its builtin tools act
// as. A subset of the Role of config/namespaced-install/served-namespace
// (the rest — deletes, finalizers, decision status — fails one run at a
// time, with a reason on it, not the whole manager).
var Rights = []Right{
	{"exagent.io", "agentruns", "list"},
	{"exagent.io", "agentruns", "watch"},
	{"exagent.io", "agents", "watch"},
	{"exagent.io", "approvaldecisions", "watch"},
	{"exagent.io", "agentruns/status", "update"},
	{"exagent.io", "agentrunsegments", "create"},
	{"events.k8s.io", "events", "create"},
	{"", "secrets", "get"},
	{"", "serviceaccounts", "impersonate"},
}

// CheckRights asks the apiserver (a SelfSubjectAccessReview each, which
// every authenticated identity may create) whether c's identity holds
// every Right in every namespace of n, and returns one error naming each
// namespace and what it lacks there. Without this, a namespace left out of
// the RBAC shows up as an informer that never syncs and a start-up timeout
// that names nothing. Every namespace served (n.All()): nothing is asked.
func CheckRights(ctx context.Context, c client.Client, n Namespaces) error {
	var missing []string
	for _, ns := range n.names {
		var lacks []string
		for _, r := range Rights {
			resource, subresource, _ := strings.Cut(r.Resource, "/")
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Group: r.Group, Resource: resource, Subresource: subresource, Verb: r.Verb,
				},
			}}
			if err := c.Create(ctx, review); err != nil {
				return fmt.Errorf("asking whether the manager may %s in namespace %s (SelfSubjectAccessReview): %w", r, ns, err)
			}
			if !review.Status.Allowed {
				lacks = append(lacks, r.String())
			}
		}
		if len(lacks) > 0 {
			missing = append(missing, fmt.Sprintf("in namespace %s it may not %s", ns, strings.Join(lacks, ", ")))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("the manager lacks its rights in namespaces of --watch-namespaces: " + strings.Join(missing, "; ") +
		": bind it the Role of config/namespaced-install/served-namespace in each (docs/install.md, \"Namespace-scoped install\"), " +
		"or remove the namespace from --watch-namespaces")
}
