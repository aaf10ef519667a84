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
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// The manager's identity on the local control plane is the one it has in a
// pod: the ServiceAccount exagent-manager of the manager's namespace, bound
// to config/rbac's roles. The admin kubeconfig a newcomer exports is then a
// person, who may decide (the manager's own identity never does), and the
// manager runs with exactly the rights a cluster grants it.
const (
	// managerServiceAccount is config/rbac's ServiceAccount name.
	managerServiceAccount = "exagent-manager"
	// managerKubeconfig is DIR/manager.kubeconfig, which the manager
	// process is started with (hack/lib/devenv.sh).
	managerKubeconfig = "manager.kubeconfig"
	// placeholderNamespace is config/rbac's name for the manager's
	// namespace, which kustomize replaces in a real install.
	placeholderNamespace = "system"
)

// managerUser is the client-certificate user that stands in for the
// ServiceAccount's token: the same user name and groups, so RBAC's
// ServiceAccount subjects and API Priority and Fairness match it alike. A
// certificate does not expire within a dev session, as a token would.
func managerUser(namespace string) envtest.User {
	return envtest.User{
		Name:   "system:serviceaccount:" + namespace + ":" + managerServiceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
	}
}

// installManagerRBAC creates the manager's ServiceAccount and binds it as
// config/rbac does: the ClusterRoleBinding to the ClusterRole
// exagent-manager (installed with the others), and its Role and RoleBinding
// in its own namespace (the leader-election Lease, the decision-signing
// Secret, the egress ConfigMap). It returns how many objects it applied.
func installManagerRBAC(ctx context.Context, c client.Client, dir, namespace string) (int, error) {
	n := 0
	for _, file := range []string{"service_account.yaml", "role.yaml", "role_binding.yaml"} {
		objs, err := readManagerObjects(filepath.Join(dir, file), namespace)
		if err != nil {
			return n, err
		}
		for _, o := range objs {
			if err := createOrUpdateObject(ctx, c, o); err != nil {
				return n, fmt.Errorf("installing %s %s from %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), file, err)
			}
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%s holds none of the manager's ServiceAccount, Role and bindings", dir)
	}
	return n, nil
}

// readManagerObjects reads the ServiceAccount, Roles and bindings of file
// (ClusterRoles are installed by installClusterRoles), with the namespace
// placeholder replaced.
func readManagerObjects(file, namespace string) ([]client.Object, error) {
	docs, err := readYAMLDocs(file)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, doc := range docs {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		var o client.Object
		switch u.GetKind() {
		case "ServiceAccount":
			o = &corev1.ServiceAccount{}
		case "Role":
			o = &rbacv1.Role{}
		case "RoleBinding":
			o = &rbacv1.RoleBinding{}
		case "ClusterRoleBinding":
			o = &rbacv1.ClusterRoleBinding{}
		default:
			continue
		}
		if err := yaml.Unmarshal(doc, o); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		inNamespace(o, namespace)
		out = append(out, o)
	}
	return out, nil
}

// inNamespace puts o, and the subjects it binds, into the manager's
// namespace where config/rbac says "system".
func inNamespace(o client.Object, namespace string) {
	if o.GetNamespace() == placeholderNamespace {
		o.SetNamespace(namespace)
	}
	var subjects []rbacv1.Subject
	switch b := o.(type) {
	case *rbacv1.RoleBinding:
		subjects = b.Subjects
	case *rbacv1.ClusterRoleBinding:
		subjects = b.Subjects
	}
	for i := range subjects {
		if subjects[i].Namespace == placeholderNamespace {
			subjects[i].Namespace = namespace
		}
	}
}

// createOrUpdateObject creates o or, with --data-dir, replaces what an
// earlier start created (the ClusterRoles and the manager's objects).
func createOrUpdateObject(ctx context.Context, c client.Client, o client.Object) error {
	err := c.Create(ctx, o)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := o.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), existing); err != nil {
		return err
	}
	o.SetResourceVersion(existing.GetResourceVersion())
	return c.Update(ctx, o)
}
