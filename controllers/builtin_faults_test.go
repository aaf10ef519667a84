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
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// lostAnswerProxy passes every request of a manager through to envtest's
// apiserver (streaming, so watches work), except that while armed it
// forwards the next write a builtin tool makes (a request impersonating a
// ServiceAccount) and then closes the connection without the answer: the
// write lands, its answer is lost.
type lostAnswerProxy struct {
	rp *httputil.ReverseProxy

	mu    sync.Mutex
	armed int
	// writes counts the builtin tools' writes that reached the apiserver.
	writes int
}

func newLostAnswerProxy(t *testing.T) (*lostAnswerProxy, string) {
	t.Helper()
	target, err := url.Parse(env().Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(env().Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &lostAnswerProxy{rp: &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1,
	}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *lostAnswerProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	toolWrite := r.Method != http.MethodGet && strings.HasPrefix(r.Header.Get("Impersonate-User"), "system:serviceaccount:")
	p.mu.Lock()
	lose := toolWrite && p.armed > 0
	if lose {
		p.armed--
	}
	if toolWrite {
		p.writes++
	}
	p.mu.Unlock()
	if !lose {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.rp.ServeHTTP(httptest.NewRecorder(), r)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func (p *lostAnswerProxy) arm(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.writes = n, 0
}

func (p *lostAnswerProxy) toolWrites() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes
}

// startManagerAt starts a manager whose every apiserver request goes to
// host (the proxy), with no credentials of its own: the proxy adds the
// admin's.
func (h *harness) startManagerAt(host string) {
	h.t.Helper()
	mgr, err := ctrl.NewManager(&rest.Config{Host: host, QPS: 2000, Burst: 4000}, h.managerOptions())
	if err != nil {
		h.t.Fatalf("new manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := h.setUpAndStart(ctx, cancel, mgr, controllers.Options{MaxConcurrentReconciles: 2})
	h.t.Cleanup(m.stop)
}

// TestBuiltinLostAnswer runs builtin writes whose apiserver answer is lost
// after the write landed, end to end through the controller: an idempotent
// one (Scale) is re-sent and the run Succeeds with one effect; one that is
// not (a Delete the ServiceAccount may not read first, so no UID fences a
// re-send) is an unknown outcome and the run waits Uncertain for a human —
// it is never reported as a failure the model would act on.
func TestBuiltinLostAnswer(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	proxy, host := newLostAnswerProxy(t)
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: h.ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: h.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "agent"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: h.ns}}},
		deployment(h.ns, "web"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: h.ns}, Data: map[string]string{"k": "v"}},
	} {
		if err := h.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	waitAllowed(t, h.ns, "agent",
		authorizationv1.ResourceAttributes{Namespace: h.ns, Verb: "patch", Group: "apps", Resource: "deployments", Subresource: "scale"},
		authorizationv1.ResourceAttributes{Namespace: h.ns, Verb: "delete", Resource: "configmaps"})
	h.startManagerAt(host)

	object := map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string"}, "replicas": map[string]any{"type": "integer"}}}
	tests := map[string]struct {
		tool       exagentv1.BuiltinTool
		args       map[string]any
		wantPhase  exagentv1.RunPhase
		wantState  exagentv1.CallState
		wantResult string
		wantWrites int
		check      func(t *testing.T)
	}{
		"an idempotent write is re-sent and the run Succeeds": {
			tool:      exagentv1.BuiltinTool{Operation: exagentv1.BuiltinScale, Kinds: []string{"Deployment.apps"}},
			args:      map[string]any{"name": "web", "replicas": 3},
			wantPhase: exagentv1.PhaseSucceeded, wantState: exagentv1.CallSucceeded,
			wantResult: "sent 2 times", wantWrites: 2,
			check: func(t *testing.T) {
				var d appsv1.Deployment
				if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "web"}, &d); err != nil {
					t.Fatal(err)
				}
				if *d.Spec.Replicas != 3 {
					t.Errorf("replicas = %d, want 3", *d.Spec.Replicas)
				}
			},
		},
		"a write that is not idempotent is Uncertain": {
			tool:      exagentv1.BuiltinTool{Operation: exagentv1.BuiltinDelete, Kinds: []string{"ConfigMap"}},
			args:      map[string]any{"name": "a"},
			wantPhase: exagentv1.PhaseUncertain, wantState: exagentv1.CallUncertain,
			wantWrites: 1,
			check: func(t *testing.T) {
				err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "a"}, &corev1.ConfigMap{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("ConfigMap a: err = %v, want NotFound (the lost delete landed)", err)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sub := &harness{t: t, ns: h.ns, c: h.c}
			agent := strings.ToLower(string(tc.tool.Operation))
			sub.createAgent(agent, exagentv1.AgentSpec{
				Model: fixture.Scripted(
					fixture.CallTurn("c1", "act", tc.args), fixture.TextTurn("done"),
				),
				Tools:  []exagentv1.ToolSpec{{Name: "act", Description: "acts on the cluster", Parameters: fixture.Raw(object), Builtin: &tc.tool}},
				Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
			})
			proxy.arm(1)
			sub.createRun(agent, agent, func(r *exagentv1.AgentRunSpec) { r.ServiceAccountName = "agent" })
			done := sub.waitRun(agent, "phase "+string(tc.wantPhase), func(r *exagentv1.AgentRun) bool {
				return r.Status.Phase == tc.wantPhase || r.Status.Phase.IsTerminal()
			})
			if done.Status.Phase != tc.wantPhase {
				t.Fatalf("phase %s (%s: %s), want %s", done.Status.Phase, done.Status.Reason, done.Status.Message, tc.wantPhase)
			}
			c := done.Status.Call("c1")
			if c == nil || c.State != tc.wantState {
				t.Fatalf("call c1 = %+v, want %s", c, tc.wantState)
			}
			if tc.wantResult != "" && (c.Outcome == nil || !strings.Contains(c.Outcome.Result, tc.wantResult)) {
				t.Errorf("call c1 outcome = %+v, want one containing %q", c.Outcome, tc.wantResult)
			}
			if n := proxy.toolWrites(); n != tc.wantWrites {
				t.Errorf("%d tool writes reached the apiserver, want %d", n, tc.wantWrites)
			}
			tc.check(t)
		})
	}
}

// waitAllowed waits until the apiserver's authorizer grants ServiceAccount
// sa every one of attrs (RBAC is read through an informer).
func waitAllowed(t *testing.T, ns, sa string, attrs ...authorizationv1.ResourceAttributes) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		for _, ra := range attrs {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:" + ns + ":" + sa,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &ra,
			}}
			if err := env().Client.Create(ctx, sar); err != nil {
				return false, err
			}
			if !sar.Status.Allowed {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s's RBAC: %v", sa, err)
	}
}
