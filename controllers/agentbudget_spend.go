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

package controllers

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agentbudgets,verbs=get;list;watch

// budgetView is one AgentBudget with the spend of the runs in its scope,
// computed from the runs' own ledgers in the manager's cache (loop.SpendOf):
// never a counter of its own, so a restart or a replay recomputes the same
// spend and nothing is charged twice.
type budgetView struct {
	budget *exagentv1.AgentBudget
	// agents are the names of the Agents its selector selects.
	agents map[string]bool
	usage  loop.BudgetUsage
	uses   []loop.LimitUse
	// invalid says why the budget holds nothing (its selector or its
	// costPerMonth does not parse; admission refuses both).
	invalid string
}

// selects tells whether the budget counts and holds runs of agent.
func (v *budgetView) selects(agent string) bool { return v.invalid == "" && v.agents[agent] }

// budgetViews are the AgentBudgets of namespace with their spend at now,
// nil when it has none. fresher gives the newest copy of a run this
// process knows (its own writes may be ahead of the cache: a claim it
// just committed must count).
func budgetViews(ctx context.Context, c client.Reader, namespace string, now time.Time,
	fresher func(*exagentv1.AgentRun) *exagentv1.AgentRun) ([]budgetView, error) {
	var budgets exagentv1.AgentBudgetList
	if err := c.List(ctx, &budgets, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the AgentBudgets of namespace %s: %w", namespace, err)
	}
	if len(budgets.Items) == 0 {
		return nil, nil
	}
	var agents exagentv1.AgentList
	if err := c.List(ctx, &agents, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the Agents of namespace %s: %w", namespace, err)
	}
	var runs exagentv1.AgentRunList
	if err := c.List(ctx, &runs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the runs of namespace %s: %w", namespace, err)
	}
	byAgent := map[string][]loop.BudgetRun{}
	for i := range runs.Items {
		run := &runs.Items[i]
		if fresher != nil {
			run = fresher(run)
		}
		byAgent[run.Spec.AgentRef.Name] = append(byAgent[run.Spec.AgentRef.Name], loop.BudgetRunOf(&run.Status))
	}
	out := make([]budgetView, 0, len(budgets.Items))
	for i := range budgets.Items {
		out = append(out, viewOf(&budgets.Items[i], agents.Items, byAgent, now))
	}
	return out, nil
}

// viewOf computes one budget's view.
func viewOf(b *exagentv1.AgentBudget, agents []exagentv1.Agent, byAgent map[string][]loop.BudgetRun, now time.Time) budgetView {
	v := budgetView{budget: b, agents: map[string]bool{}}
	sel := labels.Everything()
	if b.Spec.AgentSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(b.Spec.AgentSelector)
		if err != nil {
			v.invalid = fmt.Sprintf("spec.agentSelector: %v", err)
			return v
		}
		sel = s
	}
	limits, err := loop.LimitsOf(&b.Spec)
	if err != nil {
		v.invalid = err.Error()
		return v
	}
	var runs []loop.BudgetRun
	for i := range agents {
		if sel.Matches(labels.Set(agents[i].Labels)) {
			v.agents[agents[i].Name] = true
			runs = append(runs, byAgent[agents[i].Name]...)
		}
	}
	v.usage = loop.SpendOf(runs, now)
	v.uses = limits.Uses(v.usage)
	return v
}

// budgetHold is the first budget among views that holds a run of agent
// at gate, with its message and when to look again (0: when woken).
func budgetHold(views []budgetView, agent string, gate loop.BudgetGate, now time.Time) (message string, wait time.Duration, held bool) {
	for i := range views {
		v := &views[i]
		if !v.selects(agent) {
			continue
		}
		u, ok := gate.Blocking(v.uses)
		if !ok {
			continue
		}
		if !u.RollsOver.IsZero() {
			wait = max(u.RollsOver.Sub(now), 0) + 20*time.Millisecond
		} else {
			// maxConcurrentRuns frees as runs end, which wakes the waiting
			// runs (budgetWaiters); the poll is the fallback.
			wait = budgetPoll
		}
		return loop.BudgetMessage(v.budget.Namespace, v.budget.Name, u), wait, true
	}
	return "", 0, false
}

// budgetPoll is how often a run held by maxConcurrentRuns looks again
// when no run's end woke it.
const budgetPoll = time.Minute
