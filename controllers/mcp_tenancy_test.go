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
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// startSharedManager starts one manager whose cache serves the namespaces
// of every harness: the process every tenant shares.
func startSharedManager(t testing.TB, hs []*harness, opts controllers.Options) *manager {
	t.Helper()
	h := hs[0]
	cfg := rest.CopyConfig(env().Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	o := h.managerOptions()
	for _, x := range hs[1:] {
		o.Cache.DefaultNamespaces[x.ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(cfg, o)
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 4
	}
	ctx, cancel := context.WithCancel(context.Background())
	return h.setUpAndStart(ctx, cancel, mgr, opts)
}

// hostileAgents creates n Agents in h's namespace whose one mcp tool is
// the hanging server, each with its own token (n server keys: n listings
// the refresher may run at once), and runs Agents × perAgent runs.
func hostileAgents(t testing.TB, h *harness, url string, n, perAgent int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("hostile-%d", i)
		if err := h.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
			StringData: map[string]string{"authorization": "Bearer " + name}}); err != nil {
			t.Fatalf("creating Secret %s: %v", name, err)
		}
		h.createAgent(name, exagentv1.AgentSpec{
			Model: fixture.Scripted(
				fixture.CallTurn("c1", "echo", map[string]any{"text": "hi"}), fixture.TextTurn("done")),
			Tools: []exagentv1.ToolSpec{{Name: "echo", MCP: &exagentv1.MCPTool{URL: url,
				Headers: []exagentv1.SecretHeader{{Name: "Authorization", ValueFrom: exagentv1.SecretKeySelector{Name: name, Key: "authorization"}}}}}},
			Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		})
		for j := range perAgent {
			h.createRun(fmt.Sprintf("%s-%d", name, j), name)
		}
	}
}

// ordinaryRuns creates n runs of a Scripted Agent with no tool.
func ordinaryRuns(t testing.TB, h *harness, n int) {
	t.Helper()
	h.createAgent("ordinary", exagentv1.AgentSpec{Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted,
		Script: []exagentv1.ScriptTurn{fixture.TextTurn("done")}}})
	for i := range n {
		h.createRun(fmt.Sprintf("ordinary-%d", i), "ordinary")
	}
}

// waitAllSucceeded waits until n runs of h's namespace have Succeeded.
func waitAllSucceeded(t testing.TB, h *harness, n int, within time.Duration) {
	t.Helper()
	var done int
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		var runs exagentv1.AgentRunList
		if err := h.c.List(ctx, &runs, client.InNamespace(h.ns)); err != nil {
			return false, nil
		}
		done = 0
		for i := range runs.Items {
			if runs.Items[i].Status.Phase == exagentv1.PhaseSucceeded {
				done++
			}
		}
		return done >= n, nil
	})
	if err != nil {
		t.Fatalf("%d of %d runs in %s Succeeded within %s", done, n, h.ns, within)
	}
}

// TestMCPHangingServerSharedManager is issue 19's item 3: a tenant's MCP
// server accepts connections and never answers, under 32 runs of 8
// Agents (8 server keys); another tenant's 200 ordinary runs on the same
// manager all finish. Structurally, no reconcile worker ever waited on
// the hanging server: the refresher never ran more listings than its
// bound (2), one tenant's share of which is 1, and the server never held
// more than 2 requests at once (that one, and at most one whose client
// gave up an instant before the server noticed) — listing inline, the 4
// run workers each held one. The hostile runs wait, saying why, naming
// the server.
func TestMCPHangingServerSharedManager(t *testing.T) {
	hostile, ordinary := newHarness(t), newHarness(t)
	hang := mcptest.StartHang()
	defer hang.Close()
	m := startSharedManager(t, []*harness{hostile, ordinary}, controllers.Options{MCPListConcurrency: 2, MCPListTimeout: 2 * time.Second})
	t.Cleanup(m.stop)

	hostileAgents(t, hostile, hang.URL, 8, 4)
	if !eventually(func() bool { total, _ := hang.Requests(); return total >= 1 }) {
		t.Fatal("the hanging server was never asked")
	}
	ordinaryRuns(t, ordinary, 200)
	waitAllSucceeded(t, ordinary, 200, 3*time.Minute)

	// Until its server's first listing has timed out, the run says that
	// its listing waits for a slot or is in flight; then it names the error.
	run := hostile.waitRun("hostile-0-0", "Ready=False MCPServerUnavailable naming the server and its timeout", func(r *exagentv1.AgentRun) bool {
		c := readyCondition(r)
		return c != nil && c.Reason == exagentv1.ReasonMCPServerUnavailable && strings.Contains(c.Message, hang.URL) &&
			strings.Contains(c.Message, "no answer within")
	})
	msg := readyCondition(run).Message
	for _, want := range []string{`tool "echo"`, "no answer within 2s", "starts no tool or model IO until the server answers tools/list"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the waiting run's message %q does not say %q", msg, want)
		}
	}
	if run.Status.Phase != "" || len(run.Status.Calls) != 0 {
		t.Errorf("the hostile run is %q with %d calls, want not started", run.Status.Phase, len(run.Status.Calls))
	}
	total, most := hang.Requests()
	stats := m.ctrls.Runs.Tools.MCP.Stats()
	t.Logf("hanging server: %d requests, %d at once; refresher: %+v", total, most, stats)
	if most > 2 {
		t.Errorf("the hanging server held %d requests at once, want ≤ 2 (one tenant's share of the refresher's slots, and one just given up)", most)
	}
	if stats.MaxInFlight > 2 {
		t.Errorf("the refresher ran %d listings at once, want ≤ its bound 2", stats.MaxInFlight)
	}
}

// TestMCPServerDownThenUp: a server that fails keeps its runs waiting
// with its error; it is asked again with backoff — one listing per server
// however many runs wait, fewer and fewer as it keeps failing — and once
// it answers, every run goes on by itself.
func TestMCPServerDownThenUp(t *testing.T) {
	h := newHarness(t)
	h.mcpSecret()
	srv := mcptest.Start()
	defer srv.Close()
	srv.SetDown(true)
	h.startManager(controllers.Options{})
	h.createAgent("flaps", mcpAgent(srv, "echo", nil, exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		fixture.CallTurn("c1", "echo", map[string]any{"text": "hi"}), fixture.TextTurn("done")))
	const runs = 10
	down := time.Now()
	for i := range runs {
		h.createRun(fmt.Sprintf("flaps-%d", i), "flaps")
	}
	run := h.waitRun("flaps-0", "Ready=False MCPServerUnavailable with the server's error", func(r *exagentv1.AgentRun) bool {
		c := readyCondition(r)
		return c != nil && c.Reason == exagentv1.ReasonMCPServerUnavailable && strings.Contains(c.Message, srv.URL) &&
			strings.Contains(c.Message, "Service Unavailable")
	})
	if !strings.Contains(readyCondition(run).Message, "backoff") {
		t.Errorf("message %q does not say the server is asked again with backoff", readyCondition(run).Message)
	}
	if !eventually(func() bool { return srv.Connects() >= 3 }) {
		t.Fatalf("the server was asked %d times, want retries", srv.Connects())
	}
	asked, window := srv.Connects(), time.Since(down)
	t.Logf("asked %d times in %s", asked, window)
	// Backoff 1 s doubling: attempts at 0, 1, 3, 7, 15 … s, so within w
	// seconds at most log2(w+1)+1 of them, whatever the number of runs
	// (one listing per server).
	attempts := int(math.Floor(math.Log2(window.Seconds()+1))) + 1
	if asked > attempts {
		t.Errorf("the server was asked %d times in %s by %d runs, want ≤ %d (backoff per server)", asked, window, runs, attempts)
	}
	srv.SetDown(false)
	waitAllSucceeded(t, h, runs, 2*time.Minute)
	for i := range runs {
		if c := readyCondition(h.waitPhase(fmt.Sprintf("flaps-%d", i), exagentv1.PhaseSucceeded)); c != nil && c.Reason == exagentv1.ReasonMCPServerUnavailable {
			t.Errorf("flaps-%d still shows %s: %s", i, c.Reason, c.Message)
		}
	}
	if n := len(srv.Calls("echo")); n != runs {
		t.Errorf("server saw %d calls, want %d", n, runs)
	}
}

func readyCondition(r *exagentv1.AgentRun) *metav1.Condition {
	for i := range r.Status.Conditions {
		if c := &r.Status.Conditions[i]; c.Type == exagentv1.ConditionReady {
			return c
		}
	}
	return nil
}
