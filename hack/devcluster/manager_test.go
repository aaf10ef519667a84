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

package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// TestManagerHasItsOwnIdentity starts the local control plane and checks
// that DIR/manager.kubeconfig is the manager's ServiceAccount with exactly
// config/rbac's rights — what it needs to run, never the right to decide —
// and that the admin of DIR/kubeconfig is someone else (who may decide:
// the manager's identity never does).
func TestManagerHasItsOwnIdentity(t *testing.T) {
	if _, err := testenv.BinaryAssets(); err != nil {
		t.Fatal(err)
	}
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := options{Dir: t.TempDir(), Root: root, WebhookHost: "127.0.0.1", WebhookPort: 9443, ManagerNamespace: "exagent-system"}
	c, err := start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	clientset := func(file string) *kubernetes.Clientset {
		t.Helper()
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(o.Dir, file))
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	whoami := func(cs *kubernetes.Clientset) authenticationv1.UserInfo {
		t.Helper()
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.UserInfo
	}

	manager, admin := clientset(managerKubeconfig), clientset("kubeconfig")
	const want = "system:serviceaccount:exagent-system:exagent-manager"
	me := whoami(manager)
	if me.Username != want || !slices.Contains(me.Groups, "system:serviceaccounts:exagent-system") {
		t.Errorf("manager.kubeconfig is %q %v, want %q in its ServiceAccount groups", me.Username, me.Groups, want)
	}
	if a := whoami(admin); a.Username == me.Username {
		t.Errorf("the admin kubeconfig is the manager's identity %q: the admin could never decide", a.Username)
	}

	for name, tc := range map[string]struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		"commits a run's status":         {authorizationv1.ResourceAttributes{Namespace: "demo", Verb: "update", Group: "exagent.io", Resource: "agentruns", Subresource: "status"}, true},
		"creates segments":               {authorizationv1.ResourceAttributes{Namespace: "demo", Verb: "create", Group: "exagent.io", Resource: "agentrunsegments"}, true},
		"acts as a run's account":        {authorizationv1.ResourceAttributes{Namespace: "demo", Verb: "impersonate", Resource: "serviceaccounts", Name: "ops-agent"}, true},
		"keeps its decision signing key": {authorizationv1.ResourceAttributes{Namespace: "exagent-system", Verb: "create", Resource: "secrets"}, true},
		"holds its leader Lease":         {authorizationv1.ResourceAttributes{Namespace: "exagent-system", Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}, true},
		"never approves":                 {authorizationv1.ResourceAttributes{Namespace: "demo", Verb: "approve", Group: "exagent.io", Resource: "agents", Subresource: "approval", Name: "ops"}, false},
		"creates no Secret elsewhere":    {authorizationv1.ResourceAttributes{Namespace: "demo", Verb: "create", Resource: "secrets"}, false},
		"is no cluster admin":            {authorizationv1.ResourceAttributes{Verb: "delete", Resource: "namespaces", Name: "demo"}, false},
	} {
		attrs := tc.attrs
		r, err := manager.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != tc.want {
			t.Errorf("%s: the manager may %s %s/%s in %q = %v, want %v (%s)", name, attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Namespace,
				r.Status.Allowed, tc.want, r.Status.Reason)
		}
	}
}
