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

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The names config/namespaced-install gives the manager's grants.
const (
	managerSA          = "exagent-manager"
	managerNamespace   = "exagent-system"
	servedRoleName     = "exagent-manager-served"
	reviewsClusterRole = "exagent-manager-reviews"
)

// build renders a kustomization with the pinned kustomize.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(kustomizeBin(t), "build", dir)
	cmd.Dir = s.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
	}
	return objects(t, out)
}

func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		if o.GetNamespace() != "" {
			key = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		m[key] = o
	}
	return m
}

func into[T any](t *testing.T, o *unstructured.Unstructured, out *T) *T {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		t.Fatalf("decoding %s/%s: %v", o.GetKind(), o.GetName(), err)
	}
	return out
}

// grants flattens RBAC rules to "group/resource verb" strings, sorted.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+"/"+res+" "+v)
				}
			}
		}
		for _, u := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				out = append(out, u+" "+v)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// watchNamespacesArg is the value of the manager Deployment's
// --watch-namespaces (nil when it has none).
func watchNamespacesArg(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != "exagent-manager" {
			continue
		}
		args, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range args {
			list, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
			for _, a := range list {
				if v, ok := strings.CutPrefix(a, "--watch-namespaces="); ok {
					ns := strings.Split(v, ",")
					sort.Strings(ns)
					return ns
				}
			}
		}
	}
	return nil
}

// TestNamespacedKustomization: config/namespaced-install renders (with the
// pinned kustomize) everything config/default does but the manager's
// cluster-wide grant; no ClusterRole in it grants Secrets or impersonation;
// the manager's only ClusterRole grants reviews; the namespaces of
// --watch-namespaces are exactly those holding the manager's Role and
// RoleBinding and exactly those every webhook selects; and that Role holds
// exactly the namespaced rules of the ClusterRole `make manifests`
// generates for config/default, so the two installs cannot drift.
func TestNamespacedKustomization(t *testing.T) {
	objs := build(t, "config/namespaced-install")
	got := byKey(objs)

	t.Run("config/default but its cluster-wide grant", func(t *testing.T) {
		removed := map[string]bool{"ClusterRole/exagent-manager": true, "ClusterRoleBinding/exagent-manager": true}
		for key := range byKey(build(t, "config/default")) {
			switch {
			case removed[key] && got[key] != nil:
				t.Errorf("the namespace-scoped install keeps %s", key)
			case !removed[key] && got[key] == nil:
				t.Errorf("the namespace-scoped install lacks %s of config/default", key)
			}
		}
	})

	t.Run("no ClusterRole reads Secrets or impersonates", func(t *testing.T) {
		for _, o := range objs {
			if o.GetKind() != "ClusterRole" {
				continue
			}
			for _, r := range into(t, o, &rbacv1.ClusterRole{}).Rules {
				wide := slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")
				impersonates := slices.Contains(r.Verbs, "impersonate") || slices.Contains(r.Verbs, "*")
				if wide || impersonates {
					t.Errorf("ClusterRole %s grants %v on %v (groups %v)", o.GetName(), r.Verbs, r.Resources, r.APIGroups)
				}
			}
		}
	})

	t.Run("the manager's only cluster-wide grant is reviews", func(t *testing.T) {
		for _, o := range objs {
			if o.GetKind() != "ClusterRoleBinding" {
				continue
			}
			b := into(t, o, &rbacv1.ClusterRoleBinding{})
			for _, sub := range b.Subjects {
				if sub.Kind == "ServiceAccount" && sub.Name == managerSA && b.RoleRef.Name != reviewsClusterRole {
					t.Errorf("ClusterRoleBinding %s binds the manager to ClusterRole %s", b.Name, b.RoleRef.Name)
				}
			}
		}
		cr := got["ClusterRole/"+reviewsClusterRole]
		if cr == nil {
			t.Fatalf("no ClusterRole %s", reviewsClusterRole)
		}
		want := []string{
			"authentication.k8s.io/selfsubjectreviews create",
			"authentication.k8s.io/tokenreviews create",
			"authorization.k8s.io/subjectaccessreviews create",
		}
		if diff := cmp.Diff(want, grants(into(t, cr, &rbacv1.ClusterRole{}).Rules)); diff != "" {
			t.Errorf("ClusterRole %s grants (-want +got):\n%s", reviewsClusterRole, diff)
		}
		if b := got["ClusterRoleBinding/"+reviewsClusterRole]; b == nil {
			t.Errorf("no ClusterRoleBinding %s", reviewsClusterRole)
		} else if sub := into(t, b, &rbacv1.ClusterRoleBinding{}).Subjects; len(sub) != 1 || sub[0].Namespace != managerNamespace {
			t.Errorf("ClusterRoleBinding %s subjects %+v, want the manager in %s", reviewsClusterRole, sub, managerNamespace)
		}
	})

	watched := watchNamespacesArg(t, objs)
	if len(watched) == 0 {
		t.Fatal("the manager Deployment has no --watch-namespaces")
	}

	t.Run("a Role and RoleBinding in each served namespace, nowhere else", func(t *testing.T) {
		var roles, bindings []string
		for _, o := range objs {
			switch {
			case o.GetKind() == "Role" && o.GetName() == servedRoleName:
				roles = append(roles, o.GetNamespace())
			case o.GetKind() == "RoleBinding" && o.GetName() == servedRoleName:
				b := into(t, o, &rbacv1.RoleBinding{})
				want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: managerSA, Namespace: managerNamespace}}
				if diff := cmp.Diff(want, b.Subjects); diff != "" || b.RoleRef.Kind != "Role" || b.RoleRef.Name != servedRoleName {
					t.Errorf("RoleBinding %s/%s binds %s %s to (-want +got):\n%s", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name, diff)
				}
				bindings = append(bindings, o.GetNamespace())
			}
		}
		sort.Strings(roles)
		sort.Strings(bindings)
		if diff := cmp.Diff(watched, roles); diff != "" {
			t.Errorf("namespaces of --watch-namespaces vs of Role %s (-flag +roles):\n%s", servedRoleName, diff)
		}
		if diff := cmp.Diff(watched, bindings); diff != "" {
			t.Errorf("namespaces of --watch-namespaces vs of RoleBinding %s (-flag +bindings):\n%s", servedRoleName, diff)
		}
	})

	t.Run("the served Role is config/default's ClusterRole, namespaced", func(t *testing.T) {
		generated, err := os.ReadFile(filepath.Join(s.root, "config", "rbac", "role.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, o := range objects(t, generated) {
			if o.GetKind() == "ClusterRole" && o.GetName() == "exagent-manager" {
				for _, g := range grants(into(t, o, &rbacv1.ClusterRole{}).Rules) {
					// Reviews are not namespaced: the reviews ClusterRole has them.
					// CRDs and their storage migrations are not either: in this
					// mode the cluster admin keeps them (docs/upgrading.md).
					// Namespaces are read only for their shard pin, and
					// shards are refused with --watch-namespaces.
					if !strings.HasPrefix(g, "authentication.k8s.io/") && !strings.HasPrefix(g, "authorization.k8s.io/") &&
						!strings.HasPrefix(g, "apiextensions.k8s.io/") && !strings.HasPrefix(g, "storagemigration.k8s.io/") &&
						!strings.HasPrefix(g, "/namespaces ") {
						want = append(want, g)
					}
				}
			}
		}
		if len(want) == 0 {
			t.Fatal("config/rbac/role.yaml has no ClusterRole exagent-manager")
		}
		for _, ns := range watched {
			role := got["Role/"+ns+"/"+servedRoleName]
			if role == nil {
				continue // reported above
			}
			if diff := cmp.Diff(want, grants(into(t, role, &rbacv1.Role{}).Rules)); diff != "" {
				t.Errorf("Role %s/%s vs the generated ClusterRole exagent-manager (-generated +role); "+
					"change config/namespaced-install/served-namespace/role.yaml as `make manifests` changed config/rbac/role.yaml:\n%s",
					ns, servedRoleName, diff)
			}
		}
	})

	t.Run("every webhook selects the served namespaces only", func(t *testing.T) {
		want := map[string]any{"matchExpressions": []any{map[string]any{
			"key": "kubernetes.io/metadata.name", "operator": "In", "values": toAny(watched),
		}}}
		n := 0
		for _, o := range objs {
			if o.GetKind() != "MutatingWebhookConfiguration" && o.GetKind() != "ValidatingWebhookConfiguration" {
				continue
			}
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				n++
				sel, _, _ := unstructured.NestedMap(h.(map[string]any), "namespaceSelector")
				sortValues(sel)
				if diff := cmp.Diff(want, sel); diff != "" {
					t.Errorf("%s webhook %v namespaceSelector (-want +got):\n%s", o.GetName(), h.(map[string]any)["name"], diff)
				}
			}
		}
		if n == 0 {
			t.Error("the namespace-scoped install has no webhooks")
		}
	})
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// sortValues sorts the values of a label selector's expressions.
func sortValues(sel map[string]any) {
	exprs, _ := sel["matchExpressions"].([]any)
	for _, e := range exprs {
		if m, ok := e.(map[string]any); ok {
			if v, ok := m["values"].([]any); ok {
				slices.SortFunc(v, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
			}
		}
	}
}
