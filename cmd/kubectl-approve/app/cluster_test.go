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

package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/turn"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/webhook"
)

// The plugin against a real cluster: envtest's kube-apiserver and etcd,
// the project's CRDs, admission webhooks and controllers running in this
// process as the manager would (scripted models, a real HTTP tool), the
// shipped ClusterRoles, and people who are certificate users whose
// rights come only from RoleBindings in each test's namespace. Started
// by the first test that needs it: the package's unit tests need none.

var control = &testenv.Lazy{Options: testenv.Options{WithWebhooks: true}, Setup: startManager}

// people are the tests' users: their kubeconfigs (client certificates).
var people = map[string]*person{}

type person struct {
	rest       *rest.Config
	kubeconfig string
}

// stopManager ends the in-process manager (TestMain, after the tests).
var stopManager = func() {}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	stopManager()
	if err := control.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}

// cluster is the control plane, started on first use.
func cluster() *testenv.Env { return control.Get() }

func startManager(e *testenv.Env) error {
	ctx, cancel := context.WithCancel(context.Background())
	for _, f := range []string{"viewer_role.yaml", "editor_role.yaml", "approver_role.yaml", "resolver_role.yaml"} {
		if err := installClusterRole(ctx, e.Client, filepath.Join(testenv.RepoRoot(), "config", "rbac", f)); err != nil {
			cancel()
			return err
		}
	}
	dir, err := os.MkdirTemp("", "kubectl-approve-users-")
	if err != nil {
		cancel()
		return err
	}
	for _, name := range []string{"alice", "bob"} {
		u, err := e.AddUser(envtest.User{Name: name, Groups: []string{"people"}}, nil)
		if err != nil {
			cancel()
			return fmt.Errorf("adding user %s: %w", name, err)
		}
		kc, err := u.KubeConfig()
		if err != nil {
			cancel()
			return err
		}
		path := filepath.Join(dir, name+".kubeconfig")
		if err := os.WriteFile(path, kc, 0o600); err != nil {
			cancel()
			return err
		}
		people[name] = &person{rest: u.Config(), kubeconfig: path}
	}
	wopts, err := e.WebhookServerOptions()
	if err != nil {
		cancel()
		return err
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", WebhookServer: webhook.GateClientCerts(crwebhook.NewServer(wopts))})
	if err != nil {
		cancel()
		return fmt.Errorf("manager: %w", err)
	}
	if err := webhook.SetupWithManager(mgr); err != nil {
		cancel()
		return err
	}
	// The tool servers are on 127.0.0.1, which the default egress policy
	// denies: allowed, as --egress-allow-cidrs would.
	allow := egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if _, err := controllers.Setup(ctx, mgr, controllers.Options{Egress: allow, MaxConcurrentReconciles: 4}); err != nil {
		cancel()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	stopManager = func() {
		cancel()
		<-done
		_ = os.RemoveAll(dir)
	}
	started := mgr.GetWebhookServer().StartedChecker()
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return started(nil) == nil, nil })
}

func installClusterRole(ctx context.Context, c client.Client, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return c.Create(ctx, role)
}

// waitTimeout bounds every wait on the cluster: generous, the machine is
// shared.
const waitTimeout = 3 * time.Minute

// namespace creates a namespace for t where alice may create runs and
// approve (exagent-editor, exagent-approver) and bob may create runs and
// read (exagent-editor, exagent-viewer) but not approve.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	e := cluster()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ user, role string }{
		{"alice", "exagent-editor"}, {"alice", "exagent-approver"}, {"bob", "exagent-editor"}, {"bob", "exagent-viewer"},
	} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.user + "-" + b.role, Namespace: ns.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: b.user}}}
		if err := e.Client.Create(t.Context(), rb); err != nil {
			t.Fatal(err)
		}
	}
	return ns.Name
}

// chargeServer is the charge tool: a real HTTP server that counts calls.
type chargeServer struct {
	*httptest.Server
	mu    sync.Mutex
	count int
}

func newChargeServer(t *testing.T) *chargeServer {
	s := &chargeServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		s.count++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"charged":true}`))
	}))
	t.Cleanup(s.Close)
	return s
}

// calls is how many times the tool ran.
func (s *chargeServer) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// conversationWithCharges creates Agent charges — each turn calls charge
// (which a person approves), then answers text — and Conversation conv
// of it, mutated by edit.
func conversationWithCharges(t *testing.T, ns, conv, text string, edit func(*exagentv1.ConversationSpec)) *chargeServer {
	t.Helper()
	srv := newChargeServer(t)
	e := cluster()
	agent := fixture.MakeAgent("charges", ns).
		Script(fixture.CallTurn("c1", "charge", map[string]any{"amount": 5}), fixture.TextTurn(text)).
		Tool(fixture.HTTPTool("charge", srv.URL)).Policy(fixture.AskPolicy("charge")).Obj()
	if err := e.Client.Create(t.Context(), agent); err != nil {
		t.Fatal(err)
	}
	c := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: conv, Namespace: ns},
		Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: "charges"}}}
	if edit != nil {
		edit(&c.Spec)
	}
	if err := e.Client.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return srv
}

// plugin runs `kubectl approve ARGS…` in this process as user, with the
// user's kubeconfig, and returns what it printed and its error.
func plugin(ctx context.Context, user string, out *syncBuffer, args ...string) error {
	cmd := NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: out})
	cmd.SetArgs(append(args, "--kubeconfig", people[user].kubeconfig))
	return cmd.ExecuteContext(ctx)
}

// mustPlugin is plugin that must succeed; it returns the output.
func mustPlugin(t *testing.T, user string, args ...string) string {
	t.Helper()
	var out syncBuffer
	if err := plugin(t.Context(), user, &out, args...); err != nil {
		t.Fatalf("kubectl approve %v as %s: %v\n%s", args, user, FormatError(err), out.String())
	}
	return out.String()
}

// syncBuffer is an output a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until cond holds, reading through the admin's client.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitRun waits until run ns/name satisfies cond and returns it.
func waitRun(t *testing.T, ns, name, what string, cond func(*exagentv1.AgentRun) bool) *exagentv1.AgentRun {
	t.Helper()
	run := &exagentv1.AgentRun{}
	waitFor(t, "run "+name+" "+what, func(ctx context.Context) (bool, error) {
		if err := cluster().Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, run); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(run), nil
	})
	return run
}

func paused(r *exagentv1.AgentRun) bool { return r.Status.Phase == exagentv1.PhaseAwaitingApproval }

func succeeded(r *exagentv1.AgentRun) bool { return r.Status.Phase == exagentv1.PhaseSucceeded }

// turnsOf are the turns of conversation ns/conv, in order.
func turnsOf(t *testing.T, ns, conv string) []exagentv1.AgentRun {
	t.Helper()
	var list exagentv1.AgentRunList
	if err := cluster().Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return turn.Sorted(conv, list.Items)
}
