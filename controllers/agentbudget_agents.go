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
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agents/status,verbs=get;patch

// maxAgentBudgets bounds an Agent's status.budgets (its MaxItems).
const maxAgentBudgets = 8

// An Agent's status.budgets is written by the budget controller, not the
// Agent controller: it changes when a budget's status does (every few
// seconds while runs spend), and the Agent controller wakes only on spec
// changes and runs checks (Secret reads, MCP listings) at each wake. The
// budget controller writes only status.budgets, by a merge patch, and only
// when it differs; the Agent controller's status Update copies the field
// from the Agent it read and carries its resourceVersion, so it never
// overwrites a newer list (it conflicts and checks again).

// agentBudgetUses is the status.budgets of agent: the budgets among views
// that select it, each as its own status says (never computed again),
// sorted by name, at most maxAgentBudgets; nil when none.
func agentBudgetUses(views []budgetView, agent string) []exagentv1.AgentBudgetUse {
	var out []exagentv1.AgentBudgetUse
	for i := range views {
		v := &views[i]
		if !v.selects(agent) {
			continue
		}
		u := exagentv1.AgentBudgetUse{Name: v.budget.Name,
			Exhausted: meta.IsStatusConditionTrue(v.budget.Status.Conditions, exagentv1.ConditionExhausted)}
		for _, l := range v.budget.Status.Limits {
			u.Limits = append(u.Limits, *l.DeepCopy())
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b exagentv1.AgentBudgetUse) int { return strings.Compare(a.Name, b.Name) })
	if len(out) > maxAgentBudgets {
		out = out[:maxAgentBudgets]
	}
	return out
}

// syncAgents writes the status.budgets of each Agent of namespace whose
// list differs from what views say (a budget deleted, or no longer
// selecting the Agent, leaves its list).
func (r *AgentBudgetReconciler) syncAgents(ctx context.Context, namespace string, views []budgetView) error {
	var agents exagentv1.AgentList
	if err := r.Client.List(ctx, &agents, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the Agents of namespace %s: %w", namespace, err)
	}
	for i := range agents.Items {
		a := &agents.Items[i]
		want := agentBudgetUses(views, a.Name)
		if equality.Semantic.DeepEqual(a.Status.Budgets, want) {
			continue
		}
		// The resourceVersion read makes the patch a compare-and-swap: a
		// list computed from a stale Agent is refused and recomputed.
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": a.ResourceVersion},
			"status":   map[string]any{"budgets": want}})
		if err != nil {
			return err
		}
		if err := r.Client.Status().Patch(ctx, a, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsNotFound(err) {
				continue // deleted meanwhile
			}
			return fmt.Errorf("writing the status.budgets of Agent %s/%s: %w", namespace, a.Name, err)
		}
	}
	return nil
}
