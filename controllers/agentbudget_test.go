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
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// budgetModel is an OpenAI-compatible endpoint that answers every request
// with text, reporting 60 prompt and 40 completion tokens: each run of an
// Agent on it uses 100 tokens in one step.
func budgetModel(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-b", "object": "chat.completion", "created": 1700000000, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "done"}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 60, "completion_tokens": 40, "total_tokens": 100},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// tokenAgent creates Agent name on the budgetModel endpoint, priced.
func (h *harness) tokenAgent(name, url string, labels map[string]string) {
	h.t.Helper()
	if err := h.c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "key-" + name, Namespace: h.ns}, StringData: map[string]string{"apiKey": "sk-test"},
	}); err != nil {
		h.t.Fatal(err)
	}
	a := &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: labels}, Spec: exagentv1.AgentSpec{
		Instructions: "Answer.",
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: url + "/v1",
			APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "key-" + name, Key: "apiKey"},
			Pricing:         &exagentv1.ModelPricing{InputPerMillion: "2", OutputPerMillion: "10"}},
	}}
	if err := h.c.Create(context.Background(), a); err != nil {
		h.t.Fatalf("creating agent %s: %v", name, err)
	}
}

func (h *harness) createBudget(name string, spec exagentv1.AgentBudgetSpec) {
	h.t.Helper()
	b := &exagentv1.AgentBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: spec}
	if err := h.c.Create(context.Background(), b); err != nil {
		h.t.Fatalf("creating budget %s: %v", name, err)
	}
}

// touchBudget moves the fake clock to at and wakes the runs waiting for
// budget name (a real clock's requeue at the roll-over would): the tests
// never wait for a requeue in real time.
func (h *harness) touchBudget(clk *clocktesting.FakeClock, at time.Time, name string) {
	h.t.Helper()
	clk.SetTime(at)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.exagent.io/now":%q}}}`, at.Format(time.RFC3339Nano))
	b := &exagentv1.AgentBudget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}
	if err := h.c.Patch(context.Background(), b, client.RawPatch(types.MergePatchType, patch)); err != nil {
		h.t.Fatalf("waking budget %s: %v", name, err)
	}
}

func (h *harness) waitBudgetHeld(run, budget, limit string) *exagentv1.AgentRun {
	h.t.Helper()
	return h.waitRun(run, "BudgetExhausted by "+budget, func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseQueued && r.Status.Reason == exagentv1.ReasonBudgetExhausted &&
			strings.Contains(r.Status.Message, "AgentBudget "+h.ns+"/"+budget+": "+limit)
	})
}

// TestBudgetTokensPerDay: a budget that runs out mid-day holds the next
// runs Queued (BudgetExhausted, naming the budget and the roll-over, no
// claim, nothing sent) until the clock passes midnight UTC; then they run.
func TestBudgetTokensPerDay(t *testing.T) {
	h := newHarness(t)
	srv, requests := budgetModel(t)
	day := time.Date(2030, 1, 15, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(day)
	h.startManager(controllers.Options{Clock: clk})
	h.tokenAgent("a", srv.URL, map[string]string{"team": "a"})
	h.tokenAgent("other", srv.URL, nil)
	h.createBudget("daily", exagentv1.AgentBudgetSpec{
		AgentSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		TokensPerDay:  new(int64(200)),
	})
	for _, name := range []string{"r1", "r2"} {
		h.createRun(name, "a")
		done := h.waitPhase(name, exagentv1.PhaseSucceeded)
		if done.Status.StartedAt == nil || done.Status.Ledger.CostNanos != 60*2000+40*10000 {
			t.Errorf("%s: startedAt %v cost %d nanos, want 520000 (60×$2 + 40×$10 per million)", name, done.Status.StartedAt, done.Status.Ledger.CostNanos)
		}
	}
	// 200 tokens used: the day's budget is used up, mid-day.
	h.createRun("r3", "a")
	h.createRun("r4", "a")
	for _, name := range []string{"r3", "r4"} {
		held := h.waitBudgetHeld(name, "daily", "tokensPerDay 200 used 200")
		if !strings.Contains(held.Status.Message, "rolls over at 2030-01-16T00:00:00Z") {
			t.Errorf("%s: message %q does not say when the window rolls over", name, held.Status.Message)
		}
		if held.Status.Claim != nil || held.Status.Attempts != 0 || held.Status.StartedAt != nil {
			t.Errorf("%s: held but claimed: claim %v attempts %d startedAt %v", name, held.Status.Claim, held.Status.Attempts, held.Status.StartedAt)
		}
	}
	// Another Agent's runs are not in the budget's scope.
	h.createRun("free", "other")
	h.waitPhase("free", exagentv1.PhaseSucceeded)
	if got := requests.Load(); got != 3 {
		t.Errorf("model requests %d while r3 and r4 wait, want 3", got)
	}
	// Past midnight UTC the window rolls over: both start (the day's 200 are
	// not used by two runs of 100).
	h.touchBudget(clk, day.Add(14*time.Hour+time.Second), "daily")
	for _, name := range []string{"r3", "r4"} {
		done := h.waitPhase(name, exagentv1.PhaseSucceeded)
		if !done.Status.StartedAt.After(day.Add(14 * time.Hour)) {
			t.Errorf("%s started at %v, want the new day", name, done.Status.StartedAt)
		}
	}
	if got := requests.Load(); got != 5 {
		t.Errorf("model requests %d, want 5: every run asked once, none charged twice", got)
	}
}

// TestBudgetRaised: raising a used-up limit releases the runs waiting for it.
func TestBudgetRaised(t *testing.T) {
	h := newHarness(t)
	srv, _ := budgetModel(t)
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 15, 10, 0, 0, 0, time.UTC))
	h.startManager(controllers.Options{Clock: clk})
	h.tokenAgent("a", srv.URL, nil)
	h.createBudget("daily", exagentv1.AgentBudgetSpec{TokensPerDay: new(int64(100))})
	h.createRun("r1", "a")
	h.waitPhase("r1", exagentv1.PhaseSucceeded)
	h.createRun("r2", "a")
	h.waitBudgetHeld("r2", "daily", "tokensPerDay 100 used 100")
	b := &exagentv1.AgentBudget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "daily"}}
	if err := h.c.Patch(context.Background(), b, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"tokensPerDay":1000}}`))); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("r2", exagentv1.PhaseSucceeded)
}

// TestBudgetMaxConcurrentRuns: a run paused for a person counts as
// running; the next run waits until it ends, then starts (woken by its end).
func TestBudgetMaxConcurrentRuns(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("a", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("c1", "pay", map[string]any{"amount": 1}), fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy: fixture.AskPolicy("pay"),
	})
	h.createBudget("one", exagentv1.AgentBudgetSpec{MaxConcurrentRuns: new(int32(1))})
	h.createRun("r1", "a")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	h.createRun("r2", "a")
	h.waitBudgetHeld("r2", "one", "maxConcurrentRuns 1 used 1")
	h.approve(paused, "ok")
	h.waitPhase("r1", exagentv1.PhaseSucceeded)
	h.waitPhase("r2", exagentv1.PhaseAwaitingApproval)
}

// TestBudgetRunsPerHour: the third run in an hour waits for the sliding
// hour to free a slot; a burst created at once never passes the limit.
func TestBudgetRunsPerHour(t *testing.T) {
	h := newHarness(t)
	start := time.Date(2030, 1, 15, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("a", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("done"))})
	h.createBudget("hourly", exagentv1.AgentBudgetSpec{RunsPerHour: new(int32(2))})
	names := []string{"r1", "r2", "r3", "r4", "r5"}
	for _, n := range names {
		h.createRun(n, "a")
	}
	count := func() (started, held int) {
		for _, n := range names {
			var r exagentv1.AgentRun
			if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: n}, &r); err != nil {
				t.Fatal(err)
			}
			switch {
			case r.Status.StartedAt != nil:
				started++
			case r.Status.Reason == exagentv1.ReasonBudgetExhausted:
				held++
			}
		}
		return started, held
	}
	if !eventually(func() bool { s, held := count(); return s == 2 && held == 3 }) {
		s, held := count()
		t.Fatalf("started %d held %d, want 2 started and 3 held", s, held)
	}
	h.touchBudget(clk, start.Add(61*time.Minute), "hourly")
	if !eventually(func() bool { s, held := count(); return s == 4 && held == 1 }) {
		s, held := count()
		t.Fatalf("an hour later: started %d held %d, want 4 and 1", s, held)
	}
}

func (h *harness) waitBudget(name, what string, cond func(*exagentv1.AgentBudget) bool) *exagentv1.AgentBudget {
	h.t.Helper()
	var last exagentv1.AgentBudget
	if !eventually(func() bool {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &last)
		return err == nil && cond(&last)
	}) {
		h.t.Fatalf("budget %s: timed out waiting %s; status %+v", name, what, last.Status)
	}
	return &last
}

// TestBudgetStatusAcrossRestart: the budget's status is the spend
// recomputed from the runs' ledgers — the same after a manager restart,
// never charged twice — and says when a limit is used up.
func TestBudgetStatusAcrossRestart(t *testing.T) {
	h := newHarness(t)
	srv, _ := budgetModel(t)
	day := time.Date(2030, 3, 31, 22, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(day)
	m := h.startManager(controllers.Options{Clock: clk})
	h.tokenAgent("a", srv.URL, nil)
	h.createBudget("team", exagentv1.AgentBudgetSpec{TokensPerDay: new(int64(300)), CostPerMonth: new("1")})
	for _, n := range []string{"r1", "r2"} {
		h.createRun(n, "a")
		h.waitPhase(n, exagentv1.PhaseSucceeded)
	}
	spent := func(tokens int64, cost string) func(*exagentv1.AgentBudget) bool {
		return func(b *exagentv1.AgentBudget) bool {
			return b.Status.Spend.TokensToday == tokens && b.Status.Spend.CostThisMonth == cost
		}
	}
	before := h.waitBudget("team", "200 tokens and 0.00104 spent", spent(200, "0.00104"))
	if len(before.Status.Limits) != 2 || before.Status.Limits[0].Percent != 66 {
		t.Errorf("limits %+v, want tokensPerDay at 66%%", before.Status.Limits)
	}
	m.stop()
	h.startManager(controllers.Options{Clock: clk})
	h.touchBudget(clk, day.Add(time.Minute), "team") // a write the new manager reads
	h.createRun("r3", "a")
	h.waitPhase("r3", exagentv1.PhaseSucceeded)
	after := h.waitBudget("team", "300 tokens: the restart recomputed, not added", spent(300, "0.00156"))
	if c := meta.FindStatusCondition(after.Status.Conditions, exagentv1.ConditionExhausted); c == nil || c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "tokensPerDay 300 used 300") {
		t.Errorf("Exhausted condition %+v, want True naming tokensPerDay", c)
	}
	// The next UTC day is also the next month: tokens and cost roll over.
	h.touchBudget(clk, day.Add(2*time.Hour+time.Second), "team")
	h.waitBudget("team", "the new day's and month's windows", spent(0, "0"))
}

// waitAgentBudgets waits until Agent name's status.budgets satisfies cond.
func (h *harness) waitAgentBudgets(name, what string, cond func(*exagentv1.Agent) bool) *exagentv1.Agent {
	h.t.Helper()
	var last exagentv1.Agent
	if !eventually(func() bool {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &last)
		return err == nil && cond(&last)
	}) {
		h.t.Fatalf("agent %s: timed out waiting %s; status.budgets %+v", name, what, last.Status.Budgets)
	}
	return &last
}

// budgetNames are the names in an Agent's status.budgets, in order.
func budgetNames(a *exagentv1.Agent) []string {
	var out []string
	for _, b := range a.Status.Budgets {
		out = append(out, b.Name)
	}
	return out
}

func namesAre(want ...string) func(*exagentv1.Agent) bool {
	return func(a *exagentv1.Agent) bool { return strings.Join(budgetNames(a), ",") == strings.Join(want, ",") }
}

// sameUse tells whether an Agent's entry for budget b is b's status copied.
func sameUse(a *exagentv1.Agent, b *exagentv1.AgentBudget) bool {
	for _, u := range a.Status.Budgets {
		if u.Name == b.Name {
			return fmt.Sprint(u.Limits) == fmt.Sprint(b.Status.Limits) &&
				u.Exhausted == meta.IsStatusConditionTrue(b.Status.Conditions, exagentv1.ConditionExhausted)
		}
	}
	return false
}

// TestBudgetAgentStatus: an Agent's status.budgets lists the budgets that
// select it, sorted by name, with the spend their statuses say; a budget
// deleted or no longer selecting the Agent leaves the list; the Agent
// controller's own status writes keep it.
func TestBudgetAgentStatus(t *testing.T) {
	h := newHarness(t)
	srv, _ := budgetModel(t)
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 15, 10, 0, 0, 0, time.UTC))
	h.startManager(controllers.Options{Clock: clk})
	h.tokenAgent("a", srv.URL, map[string]string{"team": "a"})
	h.tokenAgent("b", srv.URL, map[string]string{"team": "b"})
	h.createBudget("daily", exagentv1.AgentBudgetSpec{
		AgentSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		TokensPerDay:  new(int64(200)),
	})
	h.createBudget("all", exagentv1.AgentBudgetSpec{MaxConcurrentRuns: new(int32(5))})
	h.waitAgentBudgets("a", "all and daily, by name", namesAre("all", "daily"))
	h.waitAgentBudgets("b", "all alone (daily selects team a)", namesAre("all"))

	// Spend shows on the Agent as the budget's status says it.
	h.createRun("r1", "a")
	h.waitPhase("r1", exagentv1.PhaseSucceeded)
	daily := h.waitBudget("daily", "100 tokens", func(b *exagentv1.AgentBudget) bool { return b.Status.Spend.TokensToday == 100 })
	a := h.waitAgentBudgets("a", "daily's spend", func(a *exagentv1.Agent) bool { return sameUse(a, daily) })
	if u := a.Status.Budgets[1]; len(u.Limits) != 1 || u.Limits[0].Limit != exagentv1.BudgetTokensPerDay ||
		u.Limits[0].Used != "100" || u.Limits[0].Max != "200" || u.Limits[0].Percent != 50 || u.Limits[0].RollsOverAt == nil || u.Exhausted {
		t.Errorf("agent a's daily entry %+v, want tokensPerDay 100/200 at 50%%, rolling over, not exhausted", u)
	}
	h.createRun("r2", "a")
	h.waitPhase("r2", exagentv1.PhaseSucceeded)
	h.waitAgentBudgets("a", "daily exhausted", func(a *exagentv1.Agent) bool {
		return len(a.Status.Budgets) == 2 && a.Status.Budgets[1].Exhausted && a.Status.Budgets[1].Limits[0].Percent == 100
	})

	// The Agent controller rewrites the status on a spec change: the list stays.
	patch := []byte(`{"spec":{"instructions":"Answer briefly."}}`)
	if err := h.c.Patch(context.Background(), &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "a"}},
		client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	a = h.waitAgentBudgets("a", "checked at the new generation", func(a *exagentv1.Agent) bool {
		return a.Status.ObservedGeneration == a.Generation && meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionReady) != nil
	})
	if got := budgetNames(a); strings.Join(got, ",") != "all,daily" {
		t.Errorf("after the Agent controller's write, status.budgets %v, want [all daily]", got)
	}

	// Relabelled, b is selected by daily; a is not any more.
	for name, team := range map[string]string{"a": "x", "b": "a"} {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"team":%q}}}`, team)
		if err := h.c.Patch(context.Background(), &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}},
			client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	h.waitAgentBudgets("a", "daily gone (no longer selecting it)", namesAre("all"))
	h.waitAgentBudgets("b", "daily added", namesAre("all", "daily"))

	// A budget deleted leaves every list.
	if err := h.c.Delete(context.Background(), &exagentv1.AgentBudget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "all"}}); err != nil {
		t.Fatal(err)
	}
	h.waitAgentBudgets("a", "no budget", namesAre())
	h.waitAgentBudgets("b", "daily alone", namesAre("daily"))
}
