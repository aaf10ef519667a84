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
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/model"
	"github.com/exagent-io/exagent/store"
)

// serverOn127002 is an HTTP server on 127.0.0.2, which the test managers'
// policy (127.0.0.1 allowed) denies as loopback; it counts what reaches it.
func serverOn127002(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestEgressDeniedToolCall: an http tool aimed at an address the policy
// denies ends with a clear Failed outcome that names the rule and the
// address — never Uncertain — and the model goes on.
func TestEgressDeniedToolCall(t *testing.T) {
	h := newHarness(t)
	srv, hits := serverOn127002(t)
	h.startManager(controllers.Options{})
	h.createAgent("a", exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{fixture.HTTPTool("refund", srv.URL+"/refund")},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "refund", map[string]any{"amount": 7}), fixture.TextTurn("could not refund"),
		)})
	h.createRun("r", "a")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	st, out := callResult(t, done, "c1")
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	want := "egress denied: 127.0.0.2:" + port + " is loopback (default deny; allow with --egress-allow-cidrs)"
	if st != exagentv1.CallFailed || !strings.Contains(out, want) {
		t.Errorf("call c1: %s %q, want Failed containing %q", st, out, want)
	}
	if hits.Load() != 0 {
		t.Errorf("the denied server received %d requests, want none", hits.Load())
	}
}

// TestEgressDeniedModel: a model endpoint the policy denies ends the run
// at once, Failed with reason EgressDenied, nothing sent.
func TestEgressDeniedModel(t *testing.T) {
	h := newHarness(t)
	srv, hits := serverOn127002(t)
	h.startManager(controllers.Options{})
	h.createAgent("llm", exagentv1.AgentSpec{Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: srv.URL + "/v1"}})
	h.createRun("r", "llm")
	run := h.waitPhase("r", exagentv1.PhaseFailed)
	if run.Status.Reason != exagentv1.ReasonEgressDenied || !strings.Contains(run.Status.Message, "egress denied: 127.0.0.2:") {
		t.Errorf("reason %s message %q, want EgressDenied naming the address", run.Status.Reason, run.Status.Message)
	}
	if hits.Load() != 0 || run.Status.Ledger.Requests != 1 {
		t.Errorf("%d requests received, %d charged; want none received, one (refused) request", hits.Load(), run.Status.Ledger.Requests)
	}
}

// TestModelAnswerTooLarge: a model endpoint streaming a 1 GiB answer is
// cut at the bound — the server could write no more than the bound and
// the sockets' buffers before the manager hung up — and the run fails
// clearly (ModelAnswerTooLarge) instead of reading on or succeeding.
func TestModelAnswerTooLarge(t *testing.T) {
	h := newHarness(t)
	const slack = 32 << 20
	written := make(chan int64, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat(" ", 64<<10)) // JSON whitespace, forever
		var n int64
		for n < 1<<30 {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
			http.NewResponseController(w).Flush()
		}
		written <- n
	}))
	t.Cleanup(srv.Close)
	h.startManager(controllers.Options{})
	h.createAgent("llm", exagentv1.AgentSpec{Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: srv.URL + "/v1"}})
	h.createRun("r", "llm")
	run := h.waitRun("r", "the run's end", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseFailed || run.Status.Reason != exagentv1.ReasonModelAnswerTooLarge ||
		!strings.Contains(run.Status.Message, "the model's answer is over the 8 MiB bound") {
		t.Errorf("phase %s reason %s message %q, want Failed ModelAnswerTooLarge naming the bound", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	if n := <-written; n > model.MaxAnswerBytes+slack {
		t.Errorf("the endpoint wrote %d MiB before the manager hung up, want at most the bound and %d MiB of buffers", n>>20, slack>>20)
	}
}

// TestEgressNamespaceAllowList: the platform team's ConfigMap widens the
// policy for the namespace it names, and for that namespace only — even
// over a kept-alive connection to the same server — and a tenant's own
// ConfigMap of the same shape widens nothing.
func TestEgressNamespaceAllowList(t *testing.T) {
	a, b, platform := newHarness(t), newHarness(t), newHarness(t)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: platform.ns, Name: "exagent-egress"}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{a.ns: "127.0.0.1/32"}},
		// What a tenant could write in its own namespace: never read.
		{ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: key.Name}, Data: map[string]string{b.ns: "127.0.0.1/32"}},
	} {
		if err := env().Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}

	copts := store.CacheOptions()
	copts.DefaultNamespaces = map[string]cache.Config{a.ns: {}, b.ns: {}}
	copts.ByObject[&corev1.ConfigMap{}] = egress.CacheByObject(key)
	mgr, err := ctrl.NewManager(rest.CopyConfig(env().Config), ctrl.Options{
		Scheme: env().Scheme, Cache: copts,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	lists := egress.NewConfigMapAllowLists(key, ctrl.Log.WithName("egress"))
	if err := lists.Watch(mctx, mgr.GetCache()); err != nil {
		cancel()
		t.Fatal(err)
	}
	// The defaults, loopback denied: only the ConfigMap lets a.ns through.
	m := a.setUpAndStart(mctx, cancel, mgr, controllers.Options{Egress: egress.Default(), EgressAllowLists: lists, MaxConcurrentReconciles: 2})
	t.Cleanup(m.stop)

	ts := newToolServer(t)
	agent := exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "refund", map[string]any{"amount": 7}), fixture.TextTurn("done"),
		)}
	a.createAgent("a", agent)
	a.createRun("r", "a")
	if st, out := callResult(t, a.waitPhase("r", exagentv1.PhaseSucceeded), "c1"); st != exagentv1.CallSucceeded {
		t.Fatalf("%s's call: %s %q, want Succeeded (its allow-list covers 127.0.0.1)", a.ns, st, out)
	}
	// The connection a.ns dialled stays idle in its pool: b.ns's call must
	// be dialled, and refused, under its own policy.
	b.createAgent("a", agent)
	b.createRun("r", "a")
	if st, out := callResult(t, b.waitPhase("r", exagentv1.PhaseSucceeded), "c1"); st != exagentv1.CallFailed || !strings.Contains(out, "is loopback (default deny") {
		t.Errorf("%s's call: %s %q, want Failed by the loopback rule", b.ns, st, out)
	}
	var runs []string
	for _, r := range ts.journal() {
		runs = append(runs, r.Run)
	}
	if len(runs) != 1 || runs[0] != a.ns+"/r" {
		t.Errorf("the tool server saw calls of %v, want only %s/r", runs, a.ns)
	}
}
