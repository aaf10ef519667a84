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
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// gatedTool makes ts hold each request whose path is in gates until that
// gate is closed; arrived[path] is closed at the first such request.
func gatedTool(ts *toolServer, paths ...string) (arrived, release map[string]chan struct{}) {
	arrived, release = map[string]chan struct{}{}, map[string]chan struct{}{}
	once := map[string]*sync.Once{}
	for _, p := range paths {
		arrived[p], release[p], once[p] = make(chan struct{}), make(chan struct{}), &sync.Once{}
	}
	ts.mu.Lock()
	ts.respond = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if gate, ok := release[r.URL.Path]; ok {
			once[r.URL.Path].Do(func() { close(arrived[r.URL.Path]) })
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"ok":true,"path":%q}`, r.URL.Path)
	}
	ts.mu.Unlock()
	return arrived, release
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func noUncertain(t *testing.T, run *exagentv1.AgentRun) {
	t.Helper()
	for _, c := range run.Status.Calls {
		if c.State == exagentv1.CallUncertain {
			t.Errorf("run %s: call %s is Uncertain", run.Name, c.ID)
		}
	}
}

// TestLiveOwnerKeepsLapsedLease: the owner's clock passes its lease while
// a tool call is in flight and its renewals never ran (the queue was
// long): when the answer comes back, the owner — alive, still tracking
// the call — commits it and goes on under the same attempt. Today's code
// recovered its own run and made the call Uncertain.
func TestLiveOwnerKeepsLapsedLease(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, release := gatedTool(ts, "/slow")
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("a", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "slow", map[string]any{"amount": 1}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("slow", ts.url("/slow"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("r", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "30s" })
	waitClosed(t, arrived["/slow"], "the tool request")
	clk.Step(time.Hour) // far past the lease, with no renewal written
	close(release["/slow"])
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if done.Status.Attempts != 1 {
		t.Errorf("attempts = %d, want 1: the live owner kept its claim", done.Status.Attempts)
	}
	noUncertain(t, done)
	if got := len(ts.journal()); got != 1 {
		t.Errorf("effects = %d, want 1", got)
	}
}

// TestDeletedRunsQueuedJobNeverStarts: a tool call waiting in the executor
// for its endpoint (one slot, held by another run) never starts once its
// run is deleted.
func TestDeletedRunsQueuedJobNeverStarts(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, release := gatedTool(ts, "/t")
	m := h.startManager(controllers.Options{PerEndpoint: 1})
	h.createAgent("a", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "t", map[string]any{"amount": 1}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("t", ts.url("/t"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("one", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	h.createRun("two", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	waitClosed(t, arrived["/t"], "the first tool request")
	other := "one"
	if ts.journal()[0].Run == h.ns+"/one" {
		other = "two"
	}
	h.waitRun(other, "its call begun and queued", func(r *exagentv1.AgentRun) bool {
		return len(r.Status.Calls) == 1 && r.Status.Calls[0].State == exagentv1.CallStarted
	})
	if err := h.c.Delete(t.Context(), &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: other, Namespace: h.ns}}); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return m.ctrls.Runs.InFlight(other, h.ns) == 0 }) {
		t.Fatalf("the deleted run's queued job is still counted in flight")
	}
	close(release["/t"])
	kept := "one"
	if other == "one" {
		kept = "two"
	}
	h.waitPhase(kept, exagentv1.PhaseSucceeded)
	if got := len(ts.journal()); got != 1 {
		t.Fatalf("tool requests = %d (%+v), want 1: the deleted run's job must never start", got, ts.journal())
	}
}

// TestRecreatedRunGetsNoOldResult: a run deleted while its tool call is in
// flight and re-created under the same name (same Agent, so the same call
// id, holder and attempt) never receives the old call's answer.
func TestRecreatedRunGetsNoOldResult(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	oldArrived, oldRelease := make(chan struct{}), make(chan struct{})
	newArrived, newRelease := make(chan struct{}), make(chan struct{})
	var n int
	var mu sync.Mutex
	ts.respond = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		arrived, gate, body := oldArrived, oldRelease, `{"answer":"old"}`
		if i > 1 {
			arrived, gate, body = newArrived, newRelease, `{"answer":"new"}`
		}
		close(arrived)
		select {
		case <-gate:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte(body))
	}
	m := h.startManager(controllers.Options{})
	h.createAgent("a", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "t", map[string]any{"amount": 1}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("t", ts.url("/t"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("r", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	waitClosed(t, oldArrived, "the old run's request")
	if err := h.c.Delete(t.Context(), &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: h.ns}}); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool {
		err := h.c.Get(t.Context(), types.NamespacedName{Namespace: h.ns, Name: "r"}, &exagentv1.AgentRun{})
		return apierrors.IsNotFound(err)
	}) {
		t.Fatal("the run was not deleted")
	}
	h.createRun("r", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	waitClosed(t, newArrived, "the new run's request")
	close(oldRelease) // the old call answers while the new one is in flight
	if !eventually(func() bool { return m.ctrls.Runs.InFlight("r", h.ns) == 1 }) {
		t.Fatal("the old call's job did not end")
	}
	close(newRelease)
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if c := done.Status.Calls[0]; c.Outcome == nil || !strings.Contains(c.Outcome.Result, "new") {
		t.Fatalf("the re-created run's call outcome = %+v, want the new answer", c.Outcome)
	}
	if historyContains(done, "old") {
		t.Fatalf("the re-created run's transcript holds the old run's answer: %+v", done.Status.History)
	}
}

// TestReleaserKeepsOutcomes: at a stop, one call of a batch answers during
// the drain and its sibling never does. The run cannot be handed back,
// but the answered outcome is committed all the same: after the lease
// only the unanswered call is Uncertain, and nothing is sent twice.
func TestReleaserKeepsOutcomes(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, release := gatedTool(ts, "/fast", "/slow")
	t.Cleanup(func() { close(release["/slow"]) })
	h.createAgent("a", exagentv1.AgentSpec{
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted, Script: []exagentv1.ScriptTurn{
			{ToolCalls: []exagentv1.ScriptToolCall{
				{ID: "f", Name: "fast", Arguments: fixture.Raw(map[string]any{"amount": 1})},
				{ID: "s", Name: "slow", Arguments: fixture.Raw(map[string]any{"amount": 2})},
			}},
			fixture.TextTurn("done"),
		}},
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("fast", ts.url("/fast")), fixture.HTTPTool("slow", ts.url("/slow"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	first := h.startManagerNoCleanup(controllers.Options{ReleaseOnStop: true, DrainTimeout: 3 * time.Second})
	h.createRun("r", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "10s" })
	waitClosed(t, arrived["/fast"], "the fast request")
	waitClosed(t, arrived["/slow"], "the slow request")
	first.cancel()
	close(release["/fast"]) // answers during the drain; /slow never does
	<-first.done

	stopped := h.waitRun("r", "the stop's commit", func(r *exagentv1.AgentRun) bool { return true })
	states := map[string]exagentv1.CallState{}
	for _, c := range stopped.Status.Calls {
		states[c.ID] = c.State
	}
	if states["f"] != exagentv1.CallSucceeded || states["s"] != exagentv1.CallStarted {
		t.Fatalf("calls after the stop = %v, want f Succeeded (committed by the releaser) and s Started", states)
	}
	h.startManager(controllers.Options{})
	un := h.waitPhase("r", exagentv1.PhaseUncertain)
	for _, c := range un.Status.Calls {
		if want := map[string]exagentv1.CallState{"f": exagentv1.CallSucceeded, "s": exagentv1.CallUncertain}[c.ID]; c.State != want {
			t.Errorf("call %s = %s, want %s", c.ID, c.State, want)
		}
	}
	if got := len(ts.journal()); got != 2 {
		t.Errorf("tool requests = %d, want 2 (nothing re-sent)", got)
	}
}

// TestAgentDeletedWhileCallInFlight: the Agent disappears while a call is
// in flight: its result is still committed, the run is handed back to
// wait for its Agent (no new IO), and it finishes once the Agent returns,
// with one effect.
func TestAgentDeletedWhileCallInFlight(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, release := gatedTool(ts, "/t")
	h.startManager(controllers.Options{})
	spec := exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "t", map[string]any{"amount": 1}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("t", ts.url("/t"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	}
	h.createAgent("a", spec)
	h.createRun("r", "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	waitClosed(t, arrived["/t"], "the tool request")
	if err := h.c.Delete(t.Context(), &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: h.ns}}); err != nil {
		t.Fatal(err)
	}
	h.waitRun("r", "Ready=False AgentNotFound", readyReason(exagentv1.ReasonAgentNotFound))
	close(release["/t"])
	waiting := h.waitRun("r", "the outcome committed and the run handed back", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseQueued && r.Status.Claim == nil &&
			len(r.Status.Calls) == 1 && r.Status.Calls[0].State == exagentv1.CallSucceeded
	})
	if waiting.Status.Attempts != 1 {
		t.Errorf("attempts = %d, want 1", waiting.Status.Attempts)
	}
	h.createAgent("a", spec)
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	noUncertain(t, done)
	if got := len(ts.journal()); got != 1 {
		t.Errorf("effects = %d, want 1", got)
	}
}

// TestDeadlineWithoutUsableAgent: a run whose Agent cannot run (an mcp
// server that never answers, or no Agent at all) still meets its deadline.
func TestDeadlineWithoutUsableAgent(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	h.createAgent("mcp", exagentv1.AgentSpec{
		Model: fixture.Scripted(fixture.TextTurn("done")),
		Tools: []exagentv1.ToolSpec{{Name: "m", Description: "a server that is not there",
			MCP: &exagentv1.MCPTool{URL: "http://127.0.0.1:1/mcp", Timeout: "1s"}}},
	})
	deadline := metav1.NewTime(time.Now().Add(3 * time.Second))
	h.createRun("unsupported", "mcp", func(r *exagentv1.AgentRunSpec) { r.Deadline = &deadline })
	h.createRun("missing", "nobody", func(r *exagentv1.AgentRunSpec) { r.Deadline = &deadline })
	for _, name := range []string{"unsupported", "missing"} {
		run := h.waitPhase(name, exagentv1.PhaseExpired)
		if run.Status.Reason != exagentv1.ReasonDeadlineExceeded {
			t.Errorf("run %s: reason %s, want %s", name, run.Status.Reason, exagentv1.ReasonDeadlineExceeded)
		}
	}
}

// Sizes of TestLoadNeverUncertain: make test runs the small default;
// make chaos runs 1,000 runs with a model answering in 1s.
var (
	loadRuns       = flag.Int("load.runs", 120, "TestLoadNeverUncertain: runs started at once")
	loadModelDelay = flag.Duration("load.model-delay", 0, "TestLoadNeverUncertain: how long the OpenAI-compatible model takes to answer (0: the Scripted model)")
)

// loadTurns is how many model turns each run of the load test takes: four
// that call the tool, then the answer.
const loadTurns = 5

// slowModel is an OpenAI-compatible endpoint that answers after delay:
// a tool call while the run has had fewer than loadTurns-1 tool results,
// then the final text.
func slowModel(t *testing.T, delay time.Duration) *httptest.Server {
	srv := httptest.NewServer(slowModelHandler(delay))
	t.Cleanup(srv.Close)
	return srv
}

// TestLoadNeverUncertain: many runs at once on one manager, each through
// several model and tool turns, with leases short next to the queue: load
// alone ends every run Succeeded, none Uncertain, none re-claimed.
func TestLoadNeverUncertain(t *testing.T) {
	runs := *loadRuns
	h := newHarness(t)
	ts := newToolServer(t)
	modelSpec := exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted}
	for i := range loadTurns - 1 {
		modelSpec.Script = append(modelSpec.Script, fixture.CallTurn(fmt.Sprintf("c%d", i), "t", map[string]any{"amount": i}))
	}
	modelSpec.Script = append(modelSpec.Script, fixture.TextTurn("done"))
	if *loadModelDelay > 0 {
		modelSpec = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "load",
			BaseURL: slowModel(t, *loadModelDelay).URL + "/v1"}
	}
	h.createAgent("a", exagentv1.AgentSpec{
		Model:  modelSpec,
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("t", ts.url("/t"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	m := h.startManager(controllers.Options{MaxInFlight: 2 * runs, PerEndpoint: 2 * runs})
	start := time.Now()
	for i := range runs {
		h.createRun(fmt.Sprintf("r%04d", i), "a", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "5s" })
	}
	var list exagentv1.AgentRunList
	ended := func() bool {
		if err := h.c.List(t.Context(), &list, client.InNamespace(h.ns)); err != nil {
			return false
		}
		for _, r := range list.Items {
			if !r.Status.Phase.IsTerminal() && r.Status.Phase != exagentv1.PhaseUncertain {
				return false
			}
		}
		return len(list.Items) == runs
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, waitTimeout+time.Duration(runs)*time.Second, true,
		func(context.Context) (bool, error) { return ended(), nil }); err != nil {
		t.Fatalf("not every run ended: %v", err)
	}
	elapsed := time.Since(start)
	uncertain, reclaimed := 0, 0
	for i := range list.Items {
		run := &list.Items[i]
		if run.Status.Phase != exagentv1.PhaseSucceeded {
			uncertain++
			t.Errorf("run %s ended %s (%s: %s)", run.Name, run.Status.Phase, run.Status.Reason, run.Status.Message)
			continue
		}
		noUncertain(t, run)
		if run.Status.Attempts != 1 {
			reclaimed++
			t.Errorf("run %s: attempts = %d, want 1", run.Name, run.Status.Attempts)
		}
	}
	if got, want := len(ts.journal()), runs*(loadTurns-1); got != want {
		t.Errorf("effects = %d, want %d", got, want)
	}
	t.Logf("load: %d runs × %d turns (model delay %s) in %s: %d not Succeeded, %d re-claimed, %d status writes",
		runs, loadTurns, *loadModelDelay, elapsed.Round(time.Millisecond), uncertain, reclaimed, m.ctrls.Store.Writes())
}

// TestCancelWithoutAgent: a run waiting for approval whose Agent was
// deleted can still be cancelled (RBAC on the Agent's name is enough: a
// cancel only stops work); an approve is still refused, since the policy
// that says who may approve is gone.
func TestCancelWithoutAgent(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("a", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "t", map[string]any{"amount": 1}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("t", ts.url("/t"))},
		Policy: fixture.AskPolicy("t"),
	})
	h.createRun("r", "a")
	paused := h.waitPhase("r", exagentv1.PhaseAwaitingApproval)
	if err := h.c.Delete(t.Context(), &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: h.ns}}); err != nil {
		t.Fatal(err)
	}
	h.waitRun("r", "Ready=False AgentNotFound", readyReason(exagentv1.ReasonAgentNotFound))
	h.approve(paused, "ok")
	if d := h.waitDecision("r-ok"); d.Status.Phase != exagentv1.DecisionRejected {
		t.Errorf("approve without the Agent = %s (%s), want Rejected", d.Status.Phase, d.Status.Message)
	}
	h.decide(alice, h.decision("r", "stop").Cancel().Reason("agent gone"))
	if d := h.waitDecision("r-stop"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("cancel without the Agent = %s: %s", d.Status.Phase, d.Status.Message)
	}
	h.waitPhase("r", exagentv1.PhaseCancelled)
	if got := len(ts.journal()); got != 0 {
		t.Errorf("effects = %d, want 0", got)
	}
}

// slowModelHandler is slowModel's handler (benchmarks serve it too).
func slowModelHandler(delay time.Duration) http.HandlerFunc {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		tools := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				tools++
			}
		}
		msg, finish := map[string]any{"role": "assistant", "content": "done"}, "stop"
		if tools < loadTurns-1 {
			msg, finish = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("c%d", tools), "type": "function",
				"function": map[string]any{"name": "t", "arguments": fmt.Sprintf(`{"amount":%d}`, tools)},
			}}}, "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-load", "object": "chat.completion", "created": 1700000000, "model": "load",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
		})
	})
}
