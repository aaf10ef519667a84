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
	"fmt"
	"strconv"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// AgentBudgets bound what the runs of the Agents they select use, summed
// over those runs (DESIGN §19). The spend is always computed again from
// the runs' own ledgers and start instants — never kept as a counter of
// its own that a crash or a replay could charge twice — in fixed UTC
// windows:
//
//   - tokensPerDay: the own tokens (prompt and completion, a child's
//     counted with the child's Agent) of the runs that started (were first
//     claimed) in the current UTC day. A run is charged to the day it
//     started, however long it goes on: to one window only, never twice.
//   - costPerMonth: likewise, the own cost of the runs that started in the
//     current UTC calendar month.
//   - runsPerHour: the runs that started in the last 60 minutes (sliding).
//   - maxConcurrentRuns: the runs that started and have not ended and hold
//     or wait on work (claimed, paused for a person, Approved, Uncertain) —
//     not a Queued run, which holds nothing.
//
// A run over a budget waits Queued with reason BudgetExhausted (no claim,
// no IO): WaitForBudget before its claim, HoldForBudget between two steps.

// BudgetRun is what a budget counts of one run.
type BudgetRun struct {
	// Started is the run's first claim (zero: never started).
	Started time.Time
	// Active: started, not ended, and not Queued.
	Active bool
	// Tokens and CostNanos are the run's own usage (its children's apart).
	Tokens, CostNanos int64
}

// BudgetRunOf is what a budget counts of a run's status.
func BudgetRunOf(s *exagentv1.AgentRunStatus) BudgetRun {
	l := &s.Ledger
	r := BudgetRun{
		Tokens:    max(l.PromptTokens+l.CompletionTokens-l.ChildTokens, 0),
		CostNanos: max(l.CostNanos-l.ChildCostNanos, 0),
	}
	if s.StartedAt != nil {
		r.Started = s.StartedAt.Time
		r.Active = !s.Phase.IsTerminal() && s.Phase != exagentv1.PhaseQueued && s.Phase != ""
	}
	return r
}

// BudgetUsage is the spend of the runs in a budget's scope at one instant.
type BudgetUsage struct {
	TokensToday  int64
	RunsLastHour int32
	Concurrent   int32
	CostNanos    int64
	DayStart     time.Time
	MonthStart   time.Time
	oldestInHour time.Time
}

// DayStart is the start of now's UTC day.
func DayStart(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// MonthStart is the start of now's UTC calendar month.
func MonthStart(now time.Time) time.Time {
	y, m, _ := now.UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}

// SpendOf sums runs into their windows at now.
func SpendOf(runs []BudgetRun, now time.Time) BudgetUsage {
	u := BudgetUsage{DayStart: DayStart(now), MonthStart: MonthStart(now)}
	hourAgo := now.Add(-time.Hour)
	for _, r := range runs {
		if r.Started.IsZero() {
			continue
		}
		if !r.Started.Before(u.DayStart) {
			u.TokensToday += r.Tokens
		}
		if !r.Started.Before(u.MonthStart) {
			u.CostNanos += r.CostNanos
		}
		if r.Started.After(hourAgo) {
			u.RunsLastHour++
			if u.oldestInHour.IsZero() || r.Started.Before(u.oldestInHour) {
				u.oldestInHour = r.Started
			}
		}
		if r.Active {
			u.Concurrent++
		}
	}
	return u
}

// BudgetLimits are an AgentBudget's limits, cost in nanos.
type BudgetLimits struct {
	TokensPerDay      *int64
	RunsPerHour       *int32
	MaxConcurrentRuns *int32
	CostPerMonthNanos *int64
}

// LimitsOf parses an AgentBudget's spec.
func LimitsOf(spec *exagentv1.AgentBudgetSpec) (BudgetLimits, error) {
	l := BudgetLimits{TokensPerDay: spec.TokensPerDay, RunsPerHour: spec.RunsPerHour, MaxConcurrentRuns: spec.MaxConcurrentRuns}
	if c := spec.CostPerMonth; c != nil {
		n, err := ParseNanos(*c)
		if err != nil {
			return l, fmt.Errorf("spec.costPerMonth: %w", err)
		}
		l.CostPerMonthNanos = &n
	}
	return l, nil
}

// LimitUse is the spend against one limit.
type LimitUse struct {
	// Limit is exagentv1.BudgetTokensPerDay, … .
	Limit     string
	Used, Max int64
	// RollsOver is when the window frees what it holds (zero for
	// maxConcurrentRuns: it frees as runs end).
	RollsOver time.Time
}

// Exhausted tells whether no more may be spent: used at or past the limit.
func (l LimitUse) Exhausted() bool { return l.Used >= l.Max }

// Percent is used as a whole percentage of the limit (a zero limit is
// 100% used).
func (l LimitUse) Percent() int32 {
	if l.Max <= 0 {
		return 100
	}
	return int32(min(l.Used*100/l.Max, 1<<30))
}

// Ratio is used over the limit (1 or more: exhausted).
func (l LimitUse) Ratio() float64 {
	if l.Max <= 0 {
		return 1
	}
	return float64(l.Used) / float64(l.Max)
}

// Format writes an amount of this limit (cost as a decimal).
func (l LimitUse) Format(n int64) string {
	if l.Limit == exagentv1.BudgetCostPerMonth {
		return FormatNanos(n)
	}
	return strconv.FormatInt(n, 10)
}

// Uses are the spend against each limit set, in the spec's order.
func (b BudgetLimits) Uses(u BudgetUsage) []LimitUse {
	var out []LimitUse
	if b.TokensPerDay != nil {
		out = append(out, LimitUse{Limit: exagentv1.BudgetTokensPerDay, Used: u.TokensToday, Max: *b.TokensPerDay, RollsOver: u.DayStart.AddDate(0, 0, 1)})
	}
	if b.RunsPerHour != nil {
		// The sliding hour frees its first slot when its oldest start leaves it.
		at := u.oldestInHour.Add(time.Hour)
		if u.oldestInHour.IsZero() {
			at = time.Time{}
		}
		out = append(out, LimitUse{Limit: exagentv1.BudgetRunsPerHour, Used: int64(u.RunsLastHour), Max: int64(*b.RunsPerHour), RollsOver: at})
	}
	if b.MaxConcurrentRuns != nil {
		out = append(out, LimitUse{Limit: exagentv1.BudgetMaxConcurrentRuns, Used: int64(u.Concurrent), Max: int64(*b.MaxConcurrentRuns)})
	}
	if b.CostPerMonthNanos != nil {
		out = append(out, LimitUse{Limit: exagentv1.BudgetCostPerMonth, Used: u.CostNanos, Max: *b.CostPerMonthNanos, RollsOver: u.MonthStart.AddDate(0, 1, 0)})
	}
	return out
}

// BudgetGate is which limits hold a run at one point of its life.
type BudgetGate int

const (
	// GateStart: a run's first claim — every limit.
	GateStart BudgetGate = iota
	// GateResume: the claim of a run that started before and was handed
	// back — it was counted as a start already, so not runsPerHour.
	GateResume
	// GateStep: a running run's next model request — tokens and cost.
	GateStep
)

// holds tells whether limit holds a run at gate g.
func (g BudgetGate) holds(limit string) bool {
	switch limit {
	case exagentv1.BudgetRunsPerHour:
		return g == GateStart
	case exagentv1.BudgetMaxConcurrentRuns:
		return g != GateStep
	}
	return true
}

// Blocking is the first use among uses that holds a run at gate g, and
// whether there is one.
func (g BudgetGate) Blocking(uses []LimitUse) (LimitUse, bool) {
	for _, u := range uses {
		if g.holds(u.Limit) && u.Exhausted() {
			return u, true
		}
	}
	return LimitUse{}, false
}

// BudgetMessage says which budget holds a run, by which limit, and what
// frees it.
func BudgetMessage(namespace, name string, u LimitUse) string {
	head := fmt.Sprintf("AgentBudget %s/%s: %s %s used %s", namespace, name, u.Limit, u.Format(u.Max), u.Format(u.Used))
	if u.RollsOver.IsZero() {
		return fmt.Sprintf("%s; the run starts when a run in the budget's scope ends, or raise spec.%s", head, u.Limit)
	}
	return fmt.Sprintf("%s; the window rolls over at %s, or raise spec.%s", head, u.RollsOver.UTC().Format(time.RFC3339), u.Limit)
}

// WaitForBudget keeps a Queued run from being claimed while an
// AgentBudget holds it: reason BudgetExhausted and message (BudgetMessage).
// No claim, no model request, no IO; nothing is charged.
//
// Touches: reason, message. Guard: phase Queued.
func WaitForBudget(s Status, message string) (Status, error) {
	if s.Phase != exagentv1.PhaseQueued {
		return s, conflictf("only a Queued run waits for a budget (phase %s)", s.Phase)
	}
	st := clone(s)
	setPhase(&st, exagentv1.PhaseQueued, exagentv1.ReasonBudgetExhausted, bound(message, maxMessage))
	return st, nil
}

// WithBudgetHold is env with an AgentBudget's tokens or cost used up:
// the run's next model request that starts a step is not sent; the run is
// handed back between the two steps instead (holdForBudget), Queued with
// reason BudgetExhausted and message. An empty message holds nothing.
func (e *Env) WithBudgetHold(message string) *Env {
	h := *e
	h.budgetHold = bound(message, maxMessage)
	return &h
}

// holdForBudget hands a running run back at the start of a step, with
// nothing in flight (drive returned earlier otherwise): as Release, with
// reason BudgetExhausted. Nothing was sent for the step, so nothing is
// charged; its request is sent after a later claim.
//
// Touches: phase (Queued), claim (nil), ledger active time, reason, message.
func holdForBudget(st *Status, env *Env, now time.Time) Action {
	settleOwner(st, env, now)
	st.Claim = nil
	setPhase(st, exagentv1.PhaseQueued, exagentv1.ReasonBudgetExhausted, env.budgetHold)
	return Action{Kind: ActHold, Reason: st.Reason, Message: st.Message}
}
