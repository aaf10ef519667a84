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

package chart

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// TestChartInstallUpgradeUninstall runs the Helm SDK's install, upgrade and
// uninstall against a real kube-apiserver, as helm install/upgrade/uninstall
// would: the CRDs of crds/ are installed first and are neither changed by an
// upgrade nor deleted by an uninstall (Helm's rule for crds/, which
// docs/install.md tells how to follow), the templates' objects are
// created, changed and deleted — and going sharded replaces the one
// manager Deployment by one per shard.
func TestChartInstallUpgradeUninstall(t *testing.T) {
	env := cluster(t)
	ctx := context.Background()
	cfg := helmConfig(t, env)
	c := loadChart(t)

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "exagent", releaseNamespace
	rel, err := install.RunWithContext(ctx, c, map[string]any{})
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if rel.Info.Status != release.StatusDeployed || rel.Version != 1 {
		t.Fatalf("installed release: %s, revision %d", rel.Info.Status, rel.Version)
	}
	crds := map[string]string{}
	for _, o := range crdObjects(t) {
		got := getObject(t, env.Client, o)
		if got == nil {
			t.Fatalf("install did not create %s", key(o))
		}
		waitEstablished(t, env.Client, o.GetName())
		crds[o.GetName()] = got.GetResourceVersion()
	}
	var d appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: "exagent-manager"}, &d); err != nil {
		t.Fatalf("install did not create the manager Deployment: %v", err)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "ghcr.io/exagent-io/exagent:"+c.Metadata.AppVersion {
		t.Errorf("installed Deployment: %d replicas of %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = releaseNamespace
	rel, err = upgrade.RunWithContext(ctx, "exagent", c, map[string]any{
		"replicas": 1, "extraArgs": []any{"--default-ttl-seconds-after-finished=604800"},
		"watchNamespaces": []any{"team-a"},
	})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if rel.Info.Status != release.StatusDeployed || rel.Version != 2 {
		t.Fatalf("upgraded release: %s, revision %d", rel.Info.Status, rel.Version)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&d), &d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; *d.Spec.Replicas != 1 ||
		!slices.Contains(args, "--default-ttl-seconds-after-finished=604800") || !slices.Contains(args, "--watch-namespaces=team-a") {
		t.Errorf("upgraded Deployment: %d replicas, args %q", *d.Spec.Replicas, args)
	}
	// Going namespace-scoped removed the cluster-wide grant and added the served Role.
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "exagent-manager"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the upgrade kept ClusterRoleBinding exagent-manager: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "exagent-manager-served"}, &rbacv1.Role{}); err != nil {
		t.Errorf("the upgrade did not create the served Role in team-a: %v", err)
	}
	for _, o := range crdObjects(t) {
		if got := getObject(t, env.Client, o); got == nil || got.GetResourceVersion() != crds[o.GetName()] {
			t.Errorf("the upgrade changed or removed %s: Helm leaves crds/ alone after the install", key(o))
		}
	}

	// Sharding is one upgrade: exagent-manager gives way to a Deployment
	// per shard (a selector cannot change, a name can), and a shard added
	// later reaches every manager's --shards in the same upgrade.
	values := map[string]any{
		"replicas": 1, "extraArgs": []any{"--default-ttl-seconds-after-finished=604800"},
		"watchNamespaces": []any{"team-a"},
	}
	for i, shards := range [][]string{{"a", "b"}, {"a", "b", "c"}} {
		values["shards"] = toAny(shards)
		rel, err = upgrade.RunWithContext(ctx, "exagent", c, values)
		if err != nil {
			t.Fatalf("upgrade to shards %v: %v", shards, err)
		}
		if rel.Info.Status != release.StatusDeployed || rel.Version != 3+i {
			t.Fatalf("upgraded release: %s, revision %d", rel.Info.Status, rel.Version)
		}
		for _, o := range []client.Object{&appsv1.Deployment{}, &policyv1.PodDisruptionBudget{}} {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: "exagent-manager"}, o); !apierrors.IsNotFound(err) {
				t.Errorf("shards %v: the upgrade kept %T exagent-manager: %v", shards, o, err)
			}
		}
		for _, shard := range shards {
			var d appsv1.Deployment
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: "exagent-manager-" + shard}, &d); err != nil {
				t.Errorf("shards %v: no Deployment for shard %s: %v", shards, shard, err)
				continue
			}
			if args := d.Spec.Template.Spec.Containers[0].Args; *d.Spec.Replicas != 1 || !slices.Contains(args, "--shard="+shard) ||
				!slices.Contains(args, "--shards="+strings.Join(shards, ",")) || !slices.Contains(args, "--watch-namespaces=team-a") {
				t.Errorf("shards %v: Deployment %s: %d replicas, args %q", shards, d.Name, *d.Spec.Replicas, args)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&d), &policyv1.PodDisruptionBudget{}); err != nil {
				t.Errorf("shards %v: no PodDisruptionBudget for shard %s: %v", shards, shard, err)
			}
		}
	}

	uninstall := action.NewUninstall(cfg)
	if _, err := uninstall.Run("exagent"); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	for _, o := range []client.Object{
		&appsv1.Deployment{}, &rbacv1.ClusterRole{}, &rbacv1.Role{},
	} {
		var k client.ObjectKey
		switch o.(type) {
		case *appsv1.Deployment:
			k = client.ObjectKey{Namespace: releaseNamespace, Name: "exagent-manager-a"}
		case *rbacv1.ClusterRole:
			k = client.ObjectKey{Name: "exagent-approver"}
		case *rbacv1.Role:
			k = client.ObjectKey{Namespace: "team-a", Name: "exagent-manager-served"}
		}
		if err := env.Client.Get(ctx, k, o); !apierrors.IsNotFound(err) {
			t.Errorf("uninstall left %T %s: %v", o, k, err)
		}
	}
	for _, o := range crdObjects(t) {
		if getObject(t, env.Client, o) == nil {
			t.Errorf("uninstall deleted %s, and with it every object of that kind: Helm keeps crds/", key(o))
		}
	}
	if _, err := action.NewHistory(cfg).Run("exagent"); err == nil {
		t.Error("the release is still recorded after uninstall")
	}
}

// helmConfig is the Helm SDK's configuration for the control plane, as
// helm's own --kubeconfig would make it (releases stored as Secrets).
func helmConfig(t *testing.T, env *testenv.Env) *action.Configuration {
	t.Helper()
	u, err := env.AddUser(envtest.User{Name: "helm-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	ns := releaseNamespace
	flags.KubeConfig, flags.Namespace = &path, &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, releaseNamespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// getObject reads o's current state, nil when it does not exist.
func getObject(t *testing.T, c client.Client, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), got); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return got
}
