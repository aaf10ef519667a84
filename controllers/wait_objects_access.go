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
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// resolveWaited maps a waited object's apiVersion and kind to the resource
// its watch lists, and checks what the engine could not without the
// cluster: the kind is served, namespaced, and not a Secret under any
// spelling. A problem is what the model is told.
func resolveWaited(mapper meta.RESTMapper, runNamespace string, o *exagentv1.WaitedObject) (watchKey, string) {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return watchKey{}, fmt.Sprintf("apiVersion %q does not parse: %v", o.APIVersion, err)
	}
	ns := o.Namespace
	if ns == "" {
		ns = runNamespace
	}
	if ns != runNamespace {
		// The engine refuses it; a journal written otherwise is held here.
		return watchKey{}, fmt.Sprintf("namespace %q is not the run's namespace %q", ns, runNamespace)
	}
	m, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version)
	if err != nil {
		return watchKey{}, fmt.Sprintf("kind %s of %s is not served by the cluster: %v", o.Kind, o.APIVersion, err)
	}
	if m.Resource.GroupResource() == secretsResource {
		return watchKey{}, "WaitFor never waits on Secrets"
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return watchKey{}, fmt.Sprintf("%s is not namespaced: WaitFor waits on objects of the run's namespace only", m.Resource.GroupResource())
	}
	sa := o.ServiceAccount
	if sa == "" {
		sa = "default"
	}
	return watchKey{gvr: m.Resource, namespace: ns, sa: sa}, ""
}

// secretsResource is the resource WaitFor never watches.
var secretsResource = schema.GroupResource{Resource: "secrets"}

// watchDenied asks the apiserver (SubjectAccessReviews) whether the run's
// ServiceAccount may list and watch k's resource in its namespace — what
// its shared watch does as it — and answers why not ("" when it may).
// The review names the groups the apiserver adds to an impersonated
// ServiceAccount, as the Kubernetes Events watches do (eventsDenied).
func watchDenied(ctx context.Context, c client.Client, k watchKey) (string, error) {
	var denied []string
	for _, verb := range []string{"list", "watch"} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   serviceAccountUser(k.namespace, k.sa),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + k.namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: k.namespace, Verb: verb, Group: k.gvr.Group, Version: k.gvr.Version, Resource: k.gvr.Resource,
			},
		}}
		if err := c.Create(ctx, sar); err != nil {
			return "", fmt.Errorf("creating a SubjectAccessReview for ServiceAccount %s/%s (%s %s in namespace %s): %w",
				k.namespace, k.sa, verb, k.gvr.GroupResource(), k.namespace, err)
		}
		if !sar.Status.Allowed || sar.Status.Denied {
			denied = append(denied, verb)
		}
	}
	if len(denied) == 0 {
		return "", nil
	}
	return fmt.Sprintf("forbidden: the run's ServiceAccount %s/%s may not %s %s in namespace %s, which WaitFor needs to watch them as it; "+
		"grant it list and watch on them (a Role and RoleBinding)",
		k.namespace, k.sa, strings.Join(denied, " or "), k.gvr.GroupResource(), k.namespace), nil
}
