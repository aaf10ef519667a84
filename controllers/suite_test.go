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

package controllers_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/store"
)

// One control plane for the package; every test gets its own namespace
// and its own manager(s), whose caches see only that namespace.
var (
	// users are real apiserver identities (client certificates).
	users = map[string]*testUser{}
)

type testUser struct {
	actor  exagentv1.Actor
	client client.Client
}

// Approvers of the tests: alice may approve and resolve; mallory may only
// create decisions (no approve verb on agents/approval).
// bob may approve and resolve too (RBAC); delegation tests leave him out
// of some Agents' approvers.
const (
	alice   = "alice"
	mallory = "mallory"
	bob     = "bob"
)

func TestMain(m *testing.M) {
	if os.Getenv("EXAGENT_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}
	// The users every test may act as are made right after the start.
	control.Setup = setupUsers
	control.Main(m)
}

// control is started by the first test that needs it (env). Its etcd may
// grow past the default 2 GiB quota: BenchmarkRetention fills it.
var control = &testenv.Lazy{Options: testenv.Options{EtcdQuotaBytes: 8 << 30, GarbageCollector: true}}

func env() *testenv.Env { return control.Get() }

func setupUsers(e *testenv.Env) error {
	ctx := context.Background()
	roles := []client.Object{
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-decider"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"exagent.io"}, Resources: []string{"approvaldecisions"}, Verbs: []string{"create", "get", "list", "watch"}},
				{APIGroups: []string{"exagent.io"}, Resources: []string{"agentruns"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-approver"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"exagent.io"}, Resources: []string{"agents/approval"}, Verbs: []string{"approve", "resolve", "answer"}},
			},
		},
		binding("test-decider-alice", "test-decider", alice),
		binding("test-decider-mallory", "test-decider", mallory),
		binding("test-approver-alice", "test-approver", alice),
		binding("test-decider-bob", "test-decider", bob),
		binding("test-approver-bob", "test-approver", bob),
	}
	for _, o := range roles {
		if err := e.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	for _, name := range []string{alice, mallory, bob} {
		u, err := e.AddUser(envtest.User{Name: name, Groups: []string{"exagent-test"}}, nil)
		if err != nil {
			return fmt.Errorf("adding user %s: %w", name, err)
		}
		ucfg := u.Config()
		ucfg.QPS, ucfg.Burst = 2000, 4000 // client-go's default 5 QPS would be the benchmark's bottleneck
		c, err := client.New(ucfg, client.Options{Scheme: e.Scheme})
		if err != nil {
			return err
		}
		users[name] = &testUser{
			actor:  exagentv1.Actor{Username: name, Groups: []string{"exagent-test", "system:authenticated"}},
			client: c,
		}
	}
	return nil
}

func binding(name, role, user string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
}

// harness is one test's namespace, admin client and managers.
type harness struct {
	t  testing.TB
	ns string
	c  client.Client
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	h := &harness{t: t, ns: "t-" + hex.EncodeToString(b), c: env().Client}
	if err := h.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return h
}

// testEgress is the egress policy of the test managers: the defaults,
// with 127.0.0.1 allowed (--egress-allow-cidrs=127.0.0.1/32).
var testEgress = egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})

// manager is an in-process operator. stop() is the kill: the context is
// cancelled and the process's memory (inbox, in-flight IO) is gone.
type manager struct {
	ctrls  *controllers.Controllers
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *harness) startManager(opts controllers.Options) *manager {
	h.t.Helper()
	m := h.startManagerWith(opts, nil)
	h.t.Cleanup(m.stop)
	return m
}

// startManagerNoCleanup is startManager for benchmarks (the caller stops it).
func (h *harness) startManagerNoCleanup(opts controllers.Options) *manager {
	return h.startManagerWith(opts, nil)
}

// startManagerWith starts a manager whose hooks can kill it: hooks gets the
// manager's kill switch (cancel its context, as a crash would end it).
func (h *harness) startManagerWith(opts controllers.Options, hooks func(kill func()) controllers.Hooks) *manager {
	h.t.Helper()
	cfg := rest.CopyConfig(env().Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	mopts := h.managerOptions()
	opts.Shard.Cache(&mopts.Cache) // a shard's manager caches its shard only
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		h.t.Fatalf("new manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if hooks != nil {
		opts.Hooks = hooks(cancel)
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 4
	}
	return h.setUpAndStart(ctx, cancel, mgr, opts)
}

// managerOptions are the test managers' settings: a cache of this
// namespace only, no metrics endpoint or probes.
func (h *harness) managerOptions() ctrl.Options {
	copts := store.CacheOptions()
	copts.DefaultNamespaces = map[string]cache.Config{h.ns: {}}
	return ctrl.Options{
		Scheme:                 env().Scheme,
		Cache:                  copts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
}

// setUpAndStart sets exagent's controllers up on mgr and starts it until
// cancel.
func (h *harness) setUpAndStart(ctx context.Context, cancel context.CancelFunc, mgr ctrl.Manager, opts controllers.Options) *manager {
	h.t.Helper()
	if opts.Egress == nil {
		// The tests' servers are on 127.0.0.1, which the default policy
		// denies: allowed explicitly, as --egress-allow-cidrs would.
		opts.Egress = testEgress
	}
	c, err := controllers.Setup(ctx, mgr, opts)
	if err != nil {
		cancel()
		h.t.Fatalf("setup: %v", err)
	}
	m := &manager{ctrls: c, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		_ = mgr.Start(ctx) // a stopped manager is what the tests want
	}()
	return m
}

func (m *manager) stop() {
	m.cancel()
	<-m.done
}

// toolServer is a real HTTP tool endpoint that records every request it
// receives: the journal is the tests' oracle of effects.
type toolServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []toolRequest
	// respond, when set, answers instead of 200 {"ok":true}.
	respond func(w http.ResponseWriter, r *http.Request, body []byte)
}

type toolRequest struct {
	Path, Key, Run, Call, Body string
}

func newToolServer(t testing.TB) *toolServer {
	ts := &toolServer{}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts.mu.Lock()
		ts.log = append(ts.log, toolRequest{
			Path: r.URL.Path, Key: r.Header.Get("Idempotency-Key"), Run: r.Header.Get("X-Exagent-Run"),
			Call: r.Header.Get("X-Exagent-Call"), Body: string(body),
		})
		respond := ts.respond
		ts.mu.Unlock()
		if respond != nil {
			respond(w, r, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *toolServer) journal() []toolRequest {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]toolRequest(nil), ts.log...)
}

func (ts *toolServer) url(path string) string { return ts.srv.URL + path }

// --- builders ---

func (h *harness) createAgent(name string, spec exagentv1.AgentSpec) *exagentv1.Agent {
	h.t.Helper()
	a := &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: spec}
	if err := h.c.Create(context.Background(), a); err != nil {
		h.t.Fatalf("creating agent %s: %v", name, err)
	}
	return a
}

func (h *harness) createRun(name, agent string, mutate ...func(*exagentv1.AgentRunSpec)) *exagentv1.AgentRun {
	h.t.Helper()
	r := fixture.MakeRun(name, h.ns).Agent(agent).Input("please do it").Obj()
	for _, m := range mutate {
		m(&r.Spec)
	}
	if err := h.c.Create(context.Background(), r); err != nil {
		h.t.Fatalf("creating run %s: %v", name, err)
	}
	return r
}

// --- waiting ---

const waitTimeout = 40 * time.Second

// waitRun polls the run until cond holds or the deadline passes.
func (h *harness) waitRun(name, what string, cond func(*exagentv1.AgentRun) bool) *exagentv1.AgentRun {
	h.t.Helper()
	var last exagentv1.AgentRun
	if eventually(func() bool {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &last)
		return err == nil && cond(&last)
	}) {
		return &last
	}
	h.t.Fatalf("run %s: timed out waiting for %s; phase %s reason %s message %q", name, what,
		last.Status.Phase, last.Status.Reason, last.Status.Message)
	return nil
}

func (h *harness) waitPhase(name string, phase exagentv1.RunPhase) *exagentv1.AgentRun {
	h.t.Helper()
	return h.waitRun(name, "phase "+string(phase), func(r *exagentv1.AgentRun) bool { return r.Status.Phase == phase })
}

func (h *harness) waitDecision(name string) *exagentv1.ApprovalDecision {
	h.t.Helper()
	var d exagentv1.ApprovalDecision
	if eventually(func() bool {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &d)
		return err == nil && d.Status.Phase != ""
	}) {
		return &d
	}
	h.t.Fatalf("decision %s: timed out waiting for a result", name)
	return nil
}

// eventually polls cond every 20ms until it holds (true) or waitTimeout
// passes (false): a wait on a condition with a deadline.
func eventually(cond func() bool) bool {
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, waitTimeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	return err == nil
}

// --- decisions ---

// decision is the decision named "<run>-<name>" about run, to be made with decide.
func (h *harness) decision(run, name string) *fixture.DecisionWrapper {
	return fixture.MakeDecision(run+"-"+name, h.ns, run)
}

// decide creates d as user.
func (h *harness) decide(user string, d *fixture.DecisionWrapper) *exagentv1.ApprovalDecision {
	h.t.Helper()
	u := users[user]
	// No webhook in this envtest: the test stamps what admission would —
	// the actor, and the run as the decision's owner (the garbage
	// collector deletes it with the run).
	obj := d.Actor(u.actor).Obj()
	run := &exagentv1.AgentRun{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.RunRef.Name}, run); err == nil {
		obj.SetRunOwner(run)
		if v, ok := run.Labels[exagentv1.LabelShard]; ok {
			obj.Labels = map[string]string{exagentv1.LabelShard: v} // its run's shard
		}
	}
	if err := u.client.Create(context.Background(), obj); err != nil {
		h.t.Fatalf("creating decision %s as %s: %v", obj.Name, user, err)
	}
	return obj
}

// approve creates an Approve of the run's only pending approval as alice.
func (h *harness) approve(run *exagentv1.AgentRun, name string) *exagentv1.ApprovalDecision {
	h.t.Helper()
	a := pendingApproval(h.t, run)
	return h.decide(alice, h.decision(run.Name, name).Approve(a).Reason("ok"))
}

func pendingApproval(t testing.TB, run *exagentv1.AgentRun) exagentv1.Approval {
	t.Helper()
	for _, a := range run.Status.Approvals {
		if a.State == exagentv1.ApprovalPending {
			return a
		}
	}
	t.Fatalf("run %s has no pending approval", run.Name)
	return exagentv1.Approval{}
}

// --- events ---

// eventReasons returns the reasons of the Events about object name, waiting
// until every wanted reason is there (Events are sent asynchronously).
func (h *harness) waitEvents(name string, want ...string) {
	h.t.Helper()
	var got map[string]bool
	if eventually(func() bool {
		var list eventsv1.EventList
		got = map[string]bool{}
		if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err == nil {
			for _, e := range list.Items {
				if e.Regarding.Name == name {
					got[e.Reason] = true
				}
			}
		}
		for _, w := range want {
			if !got[w] {
				return false
			}
		}
		return true
	}) {
		return
	}
	h.t.Fatalf("events of %s: want %v, have %v", name, want, got)
}
