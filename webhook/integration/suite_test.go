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

package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/webhook"
)

// The suite's shared control plane: one apiserver, one manager serving the
// webhooks, the shipped ClusterRoles installed. Tests isolate themselves by
// namespace; the two that reconfigure the webhooks restore them.
var (
	env   *testenv.Env
	admin client.Client
	// signature is the manager's decision signer, loaded as cmd/manager does.
	signer *authz.Signer
)

const managerNamespace = "exagent-system"

// Users of the suite, authenticated by client certificates. Their rights
// come only from the RoleBindings each test creates in its namespace.
var users = map[string][]string{
	"alice":  {"payments-approvers"}, // approver, listed by group
	"bob":    {"payments-approvers"}, // may create decisions, lacks the verb
	"carol":  nil,                    // approver by RBAC, not listed
	"dave":   {"payments-approvers"}, // editor + approver: requests runs
	"erin":   {"payments-approvers"}, // approve only on agent "payments"
	"grace":  {"payments-approvers"}, // resolver
	"olivia": nil,                    // namespace owner: cluster-admin in her namespace
	"victor": nil,                    // viewer
}

var userConfigs = map[string]*rest.Config{}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	logf.SetLogger(logr.Discard())
	var err error
	env, err = testenv.Start(testenv.Options{WithWebhooks: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	admin = env.Client

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "suite setup:", err)
		return 1
	}
	return m.Run()
}

func setup(ctx context.Context) error {
	for _, f := range []string{"viewer_role.yaml", "editor_role.yaml", "approver_role.yaml", "resolver_role.yaml", "budget_admin_role.yaml"} {
		if err := installClusterRole(ctx, filepath.Join(testenv.RepoRoot(), "config", "rbac", f)); err != nil {
			return err
		}
	}
	for name, groups := range users {
		u, err := env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
		if err != nil {
			return fmt.Errorf("adding user %s: %w", name, err)
		}
		userConfigs[name] = u.Config()
	}

	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}}); err != nil {
		return fmt.Errorf("creating the manager's namespace: %w", err)
	}
	signingRef := types.NamespacedName{Namespace: managerNamespace, Name: authz.DefaultSigningSecretName}
	var err error
	if signer, err = authz.LoadSigner(ctx, admin, admin, signingRef); err != nil {
		return err
	}

	// As with --webhook-client-ca: only the apiserver's client certificate is answered.
	wopts, err := env.WebhookServerOptions()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.GateClientCerts(crwebhook.NewServer(wopts)),
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	// Every run is placed on one of suiteShards, as with --shards.
	if err := webhook.SetupWithManager(mgr, webhook.WithSigner(signer),
		webhook.WithPlacer(&shard.Placer{Shards: suiteShards, Reader: mgr.GetClient()})); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	started := mgr.GetWebhookServer().StartedChecker()
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return started(nil) == nil, nil })
}

func installClusterRole(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	if err := admin.Create(ctx, role); err != nil {
		return fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
	}
	return nil
}

// as returns a client authenticated as one of the suite's users.
func as(t *testing.T, name string) client.Client {
	t.Helper()
	cfg, ok := userConfigs[name]
	if !ok {
		t.Fatalf("no user %q", name)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("client for %s: %v", name, err)
	}
	return c
}

// impersonating returns the admin's client impersonating user (kubectl --as).
func impersonating(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("impersonating client: %v", err)
	}
	return c
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "adm-"}}
	if err := admin.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// bind grants user a ClusterRole or Role in ns.
func bind(t *testing.T, ns, user, kind, role string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := admin.Create(t.Context(), rb); err != nil {
		t.Fatalf("binding %s to %s %s: %v", user, kind, role, err)
	}
}

func createRole(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}
	if err := admin.Create(t.Context(), r); err != nil {
		t.Fatalf("creating Role %s: %v", name, err)
	}
}
