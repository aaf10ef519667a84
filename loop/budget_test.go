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

package loop

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestCostNanos(t *testing.T) {
	// Anthropic-like: $3 input, $15 output, $0.30 cache read, $3.75 cache write per million.
	p, err := ParsePricing(&exagentv1.ModelPricing{InputPerMillion: "3", OutputPerMillion: "15", CacheReadPerMillion: "0.30", CacheWritePerMillion: "3.75"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		p    *Pricing
		r    ModelResponse
		want int64
	}{
		"no pricing costs nothing":      {nil, ModelResponse{PromptTokens: 1000, CompletionTokens: 1000}, 0},
		"input only":                    {p, ModelResponse{PromptTokens: 1_000_000}, 3 * nanosPerUnit},
		"output only":                   {p, ModelResponse{CompletionTokens: 2_000_000}, 30 * nanosPerUnit},
		"cache read is part of prompt":  {p, ModelResponse{PromptTokens: 1_000_000, CacheReadTokens: 1_000_000}, 300_000_000},
		"cache write is part of prompt": {p, ModelResponse{PromptTokens: 1_000_000, CacheCreationTokens: 1_000_000}, 3_750_000_000},
		"each kind at its price": {p, ModelResponse{PromptTokens: 1000, CacheReadTokens: 200, CacheCreationTokens: 300, CompletionTokens: 100},
			// 500 plain×3000 + 200×300 + 300×3750 + 100×15000 nanos per token.
			500*3000 + 200*300 + 300*3750 + 100*15000},
		"rounded to the nearest nano":                       {&Pricing{Input: 1}, ModelResponse{PromptTokens: 500_000}, 1},
		"negative counts count as 0":                        {p, ModelResponse{PromptTokens: -5, CompletionTokens: -1}, 0},
		"cache beyond the prompt charges no negative plain": {p, ModelResponse{PromptTokens: 10, CacheReadTokens: 20}, 20 * 300},
	}
	for name, tc := range cases {
		if got := CostNanos(tc.p, tc.r); got != tc.want {
			t.Errorf("%s: cost %d nanos, want %d", name, got, tc.want)
		}
	}
}

func TestParsePricingDefaults(t *testing.T) {
	p, err := ParsePricing(&exagentv1.ModelPricing{InputPerMillion: "2.5", OutputPerMillion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Pricing{Input: 2_500_000_000, Output: 10 * nanosPerUnit, CacheRead: 2_500_000_000, CacheWrite: 2_500_000_000}); *p != want {
		t.Errorf("pricing %+v, want %+v (cache prices default to the input price)", *p, want)
	}
	for _, bad := range []string{"-1", "1.0000000001", "1e3", "1..2", ".5", "abc"} {
		if _, err := ParsePricing(&exagentv1.ModelPricing{InputPerMillion: bad}); err == nil {
			t.Errorf("price %q parsed", bad)
		}
	}
}

func TestNanosRoundTrip(t *testing.T) {
	for s, n := range map[string]int64{"0": 0, "3": 3 * nanosPerUnit, "0.3": 300_000_000, "12.000000001": 12*nanosPerUnit + 1, "100.25": 100_250_000_000} {
		got, err := ParseNanos(s)
		if err != nil || got != n {
			t.Errorf("ParseNanos(%q) = %d, %v; want %d", s, got, err, n)
		}
		if f := FormatNanos(n); f != s {
			t.Errorf("FormatNanos(%d) = %q, want %q", n, f, s)
		}
	}
}

// TestResponseChargesCostOnce: a model response's cost is charged with its
// tokens, once; a re-sent request's lost answer charges nothing.
func TestResponseChargesCostOnce(t *testing.T) {
	env := mustEnv(t, MakeAgent().Spec(), MakeRun().Spec())
	agent := MakeAgent().Spec()
	agent.Model.Pricing = &exagentv1.ModelPricing{InputPerMillion: "1", OutputPerMillion: "2"}
	priced := mustEnv(t, agent, MakeRun().Spec())
	for name, tc := range map[string]struct {
		env  *Env
		want int64
	}{"priced": {priced, 100*1000 + 10*2000}, "unpriced": {env, 0}} {
		h := newHarness(t, tc.env).claim(w1)
		h.step()
		h.respond(ModelResponse{Content: "done", PromptTokens: 100, CompletionTokens: 10})
		if got := h.s.Ledger.CostNanos; got != tc.want {
			t.Errorf("%s: ledger cost %d nanos, want %d", name, got, tc.want)
		}
		if _, err := RecordModelResponse(h.s, h.env, h.f, ModelResponse{Content: "again", PromptTokens: 100}, h.now); err == nil {
			t.Errorf("%s: a second answer to the same request was recorded", name)
		}
	}
}

// TestPricingNotFingerprinted: changing prices never makes a run drift.
func TestPricingNotFingerprinted(t *testing.T) {
	a := MakeAgent().Spec()
	b := MakeAgent().Spec()
	b.Model.Pricing = &exagentv1.ModelPricing{InputPerMillion: "3", OutputPerMillion: "15"}
	ea, eb := mustEnv(t, a, MakeRun().Spec()), mustEnv(t, b, MakeRun().Spec())
	if ea.Binding().Model != eb.Binding().Model || ea.Binding().Definition != eb.Binding().Definition {
		t.Fatalf("pricing changed the fingerprints: %+v vs %+v", ea.Binding(), eb.Binding())
	}
	s := queued(t, ea)
	if err := CheckDrift(s, eb); err != nil {
		t.Errorf("a run queued before the price change drifts: %v", err)
	}
}

// TestStartedAtIsTheFirstClaim: the window a run is charged to is its
// first claim; a later claim never moves it.
func TestStartedAtIsTheFirstClaim(t *testing.T) {
	env := mustEnv(t, MakeAgent().Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	first := h.s.StartedAt
	if first == nil || !first.Time.Equal(t0.Truncate(time.Second)) {
		t.Fatalf("startedAt %v after the first claim at %v", first, t0)
	}
	s, err := Release(h.s, env, h.f, h.now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err = Claim(s, env, "worker-2", t0.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !s.StartedAt.Equal(first) {
		t.Errorf("startedAt moved to %v at a later claim", s.StartedAt)
	}
}

func TestBudgetRunOf(t *testing.T) {
	at := metav1.NewTime(t0)
	cases := map[string]struct {
		s    exagentv1.AgentRunStatus
		want BudgetRun
	}{
		"never started": {exagentv1.AgentRunStatus{Phase: exagentv1.PhaseQueued}, BudgetRun{}},
		"running": {exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, StartedAt: &at, Ledger: exagentv1.Ledger{PromptTokens: 10, CompletionTokens: 5, CostNanos: 7}},
			BudgetRun{Started: t0, Active: true, Tokens: 15, CostNanos: 7}},
		"paused counts as concurrent": {exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, StartedAt: &at}, BudgetRun{Started: t0, Active: true}},
		"handed back holds nothing":   {exagentv1.AgentRunStatus{Phase: exagentv1.PhaseQueued, StartedAt: &at}, BudgetRun{Started: t0}},
		"ended":                       {exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded, StartedAt: &at, Ledger: exagentv1.Ledger{PromptTokens: 3}}, BudgetRun{Started: t0, Tokens: 3}},
		"a child's usage is the child's": {exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, StartedAt: &at,
			Ledger: exagentv1.Ledger{PromptTokens: 100, CompletionTokens: 50, ChildTokens: 120, CostNanos: 90, ChildCostNanos: 80}},
			BudgetRun{Started: t0, Active: true, Tokens: 30, CostNanos: 10}},
	}
	for name, tc := range cases {
		if got := BudgetRunOf(&tc.s); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

func TestSpendWindows(t *testing.T) {
	now := time.Date(2026, 12, 6, 15, 30, 0, 0, time.UTC)
	runs := []BudgetRun{
		{Started: time.Date(2026, 12, 5, 23, 59, 59, 0, time.UTC), Tokens: 1000, CostNanos: 1000, Active: true}, // yesterday: not today's tokens
		{Started: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), Tokens: 10, CostNanos: 1},                       // midnight is today
		{Started: now.Add(-61 * time.Minute), Tokens: 20},
		{Started: now.Add(-59 * time.Minute), Tokens: 30, Active: true},
		{Started: now.Add(-time.Minute), Tokens: 40},
		{Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Tokens: 5000, CostNanos: 5000}, // last month
		{Tokens: 99999, CostNanos: 99999},                                                        // never started: nothing
	}
	u := SpendOf(runs, now)
	if u.TokensToday != 100 {
		t.Errorf("tokens today %d, want 100", u.TokensToday)
	}
	if u.CostNanos != 1001 {
		t.Errorf("cost this month %d, want 1001", u.CostNanos)
	}
	if u.RunsLastHour != 2 {
		t.Errorf("runs last hour %d, want 2", u.RunsLastHour)
	}
	if u.Concurrent != 2 {
		t.Errorf("concurrent %d, want 2", u.Concurrent)
	}
	limits := BudgetLimits{TokensPerDay: new(int64(100)), RunsPerHour: new(int32(3)), MaxConcurrentRuns: new(int32(2)), CostPerMonthNanos: new(int64(2000))}
	uses := limits.Uses(u)
	want := []LimitUse{
		{Limit: exagentv1.BudgetTokensPerDay, Used: 100, Max: 100, RollsOver: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)},
		{Limit: exagentv1.BudgetRunsPerHour, Used: 2, Max: 3, RollsOver: now.Add(-59 * time.Minute).Add(time.Hour)},
		{Limit: exagentv1.BudgetMaxConcurrentRuns, Used: 2, Max: 2},
		{Limit: exagentv1.BudgetCostPerMonth, Used: 1001, Max: 2000, RollsOver: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	if len(uses) != len(want) {
		t.Fatalf("uses %+v", uses)
	}
	for i := range want {
		if uses[i] != want[i] {
			t.Errorf("use %d = %+v, want %+v", i, uses[i], want[i])
		}
	}
	if !uses[0].Exhausted() || uses[1].Exhausted() || uses[0].Percent() != 100 || uses[3].Percent() != 50 {
		t.Errorf("exhaustion or percent wrong: %+v", uses)
	}
}

func TestBudgetGates(t *testing.T) {
	tokens := LimitUse{Limit: exagentv1.BudgetTokensPerDay, Used: 10, Max: 10}
	runs := LimitUse{Limit: exagentv1.BudgetRunsPerHour, Used: 5, Max: 5}
	conc := LimitUse{Limit: exagentv1.BudgetMaxConcurrentRuns, Used: 2, Max: 2}
	free := LimitUse{Limit: exagentv1.BudgetCostPerMonth, Used: 1, Max: 2}
	cases := map[string]struct {
		g    BudgetGate
		uses []LimitUse
		want string
	}{
		"start: runs per hour holds":            {GateStart, []LimitUse{free, runs}, exagentv1.BudgetRunsPerHour},
		"resume: runs per hour counted already": {GateResume, []LimitUse{free, runs}, ""},
		"resume: concurrency holds":             {GateResume, []LimitUse{runs, conc}, exagentv1.BudgetMaxConcurrentRuns},
		"step: only tokens and cost":            {GateStep, []LimitUse{runs, conc}, ""},
		"step: tokens hold":                     {GateStep, []LimitUse{conc, tokens}, exagentv1.BudgetTokensPerDay},
		"nothing used up":                       {GateStart, []LimitUse{free}, ""},
	}
	for name, tc := range cases {
		u, ok := tc.g.Blocking(tc.uses)
		if got := map[bool]string{true: u.Limit}[ok]; got != tc.want {
			t.Errorf("%s: blocked by %q, want %q", name, got, tc.want)
		}
	}
}

func TestBudgetMessage(t *testing.T) {
	msg := BudgetMessage("team-a", "daily", LimitUse{Limit: exagentv1.BudgetTokensPerDay, Used: 100412, Max: 100000, RollsOver: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)})
	if want := "AgentBudget team-a/daily: tokensPerDay 100000 used 100412; the window rolls over at 2026-12-07T00:00:00Z, or raise spec.tokensPerDay"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	cost := BudgetMessage("ns", "b", LimitUse{Limit: exagentv1.BudgetCostPerMonth, Used: 12_500_000_000, Max: 12 * nanosPerUnit, RollsOver: t0})
	if !strings.Contains(cost, "costPerMonth 12 used 12.5") {
		t.Errorf("cost message %q", cost)
	}
	conc := BudgetMessage("ns", "b", LimitUse{Limit: exagentv1.BudgetMaxConcurrentRuns, Used: 2, Max: 2})
	if !strings.Contains(conc, "when a run in the budget's scope ends") {
		t.Errorf("concurrency message %q", conc)
	}
}

func TestWaitForBudget(t *testing.T) {
	env := mustEnv(t, MakeAgent().Spec(), MakeRun().Spec())
	q := queued(t, env)
	got, err := WaitForBudget(q, "AgentBudget ns/b: …")
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != exagentv1.PhaseQueued || got.Reason != exagentv1.ReasonBudgetExhausted || got.Claim != nil || got.Attempts != 0 ||
		got.Ledger != q.Ledger {
		t.Errorf("held run %s/%s claim %v attempts %d ledger %+v", got.Phase, got.Reason, got.Claim, got.Attempts, got.Ledger)
	}
	if _, err := WaitForBudget(running(t, env), "x"); !IsKind(err, KindConflict) {
		t.Errorf("a running run was held without its fence: %v", err)
	}
}

// TestHoldForBudget: a running run whose budget's tokens or cost are
// used up is handed back at its next step's start — Queued,
// BudgetExhausted, no claim — with nothing sent or charged; IO in flight
// is waited for first.
func TestHoldForBudget(t *testing.T) {
	env := defaultEnv(t)
	hold := env.WithBudgetHold("AgentBudget ns/b: tokensPerDay 10 used 12")
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("s1", "search", `{"q":"x"}`)))
	h.step() // s1 Started
	mid := h.s
	if _, act, err := Step(mid, hold, h.f, h.now); err != nil || act.Kind != ActWait {
		t.Fatalf("with a call in flight: %v %v, want Wait", act.Kind, err)
	}
	h.outcome("s1", ResultSucceeded, "found")
	requests := h.s.Ledger.Requests
	got, act, err := Step(h.s, hold, h.f, h.now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if act.Kind != ActHold || got.Phase != exagentv1.PhaseQueued || got.Reason != exagentv1.ReasonBudgetExhausted ||
		got.Claim != nil || got.Ledger.Requests != requests || got.Cursor.ModelRequest != nil || got.Cursor.Stage != exagentv1.StageRequest {
		t.Errorf("held: action %s, %s/%s claim %v requests %d (want %d) intent %v stage %s", act.Kind, got.Phase, got.Reason,
			got.Claim, got.Ledger.Requests, requests, got.Cursor.ModelRequest, got.Cursor.Stage)
	}
	if got.Message != "AgentBudget ns/b: tokensPerDay 10 used 12" {
		t.Errorf("message %q", got.Message)
	}
	// The next claim goes on from where it was held.
	again, f, err := Claim(got, env, "worker-2", h.now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, act, err := Step(again, env, f, h.now.Add(time.Hour)); err != nil || act.Kind != ActCallModel {
		t.Errorf("after the hold: %v %v, want CallModel", act.Kind, err)
	}
}
