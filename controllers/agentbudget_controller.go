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
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agentbudgets/status,verbs=get;update

var (
	budgetUsedRatio = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "exagent_budget_used_ratio",
		Help: "Spend over the limit of each AgentBudget limit (1 or more: used up, new runs wait BudgetExhausted), from the runs' ledgers.",
	}, []string{"namespace", "budget", "limit"})
	budgetExhaustedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_budget_exhausted_total",
		Help: "Times this process saw an AgentBudget limit become used up (crossing 100 %).",
	}, []string{"namespace", "budget", "limit"})
)

func init() { metrics.Registry.MustRegister(budgetUsedRatio, budgetExhaustedTotal) }

// budgetSpendWrite is the least time between two status writes of one
// budget that change only its spend's amounts: tokens change at every
// model response, the apiserver is shared.
const budgetSpendWrite = 10 * time.Second

// AgentBudgetReconciler writes each AgentBudget's status — its spend
// computed from the runs in its scope (budgetViews), percent per limit,
// Exhausted — exports exagent_budget_used_ratio, records a Warning Event
// when a limit crosses 80 % and 100 %, and copies each budget's status to
// the status.budgets of the Agents it selects (agentbudget_agents.go). It holds no run: the run
// controller does (agentbudget_gate.go), from the same computation.
type AgentBudgetReconciler struct {
	// Owner says which of these objects this manager writes (shards.go).
	Owner    Ownership
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Name     string

	mu sync.Mutex
	// written is when this process last wrote each budget's status.
	written map[types.NamespacedName]time.Time
}

// SetupWithManager registers the controller: a budget is computed again
// when it changes and when a run or an Agent of its namespace does (an
// Agent created, deleted, relabelled or respecified).
func (r *AgentBudgetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Name == "" {
		r.Name = "agentbudget"
	}
	r.written = map[types.NamespacedName]time.Time{}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		For(&exagentv1.AgentBudget{}).
		Watches(&exagentv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOf)).
		// An Agent's status (conditions, and the budgets this controller
		// writes) selects nothing: only its labels, spec and existence do.
		Watches(&exagentv1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOf),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Complete(quietConflicts{controller: r.Name, next: ownedOnly(r.Owner, budgetKey, r)})
}

func (r *AgentBudgetReconciler) budgetsOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list exagentv1.AgentBudgetList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// Reconcile computes one budget's status and writes it when it changed,
// then brings the status.budgets of the namespace's Agents in line with
// the budgets' statuses (agentbudget_agents.go).
func (r *AgentBudgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.Clock.Now()
	views, err := budgetViews(ctx, r.Client, req.Namespace, now, nil)
	if err != nil {
		return ctrl.Result{}, err
	}
	var v *budgetView
	for i := range views {
		if views[i].budget.Name == req.Name {
			v = &views[i]
		}
	}
	if v == nil {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, r.syncAgents(ctx, req.Namespace, views)
	}
	res, err := r.writeStatus(ctx, req, v, now)
	if err != nil {
		return res, err
	}
	return res, r.syncAgents(ctx, req.Namespace, views)
}

// writeStatus writes v's status when it changed (spend alone at most every
// budgetSpendWrite); v then holds the budget as written.
func (r *AgentBudgetReconciler) writeStatus(ctx context.Context, req ctrl.Request, v *budgetView, now time.Time) (ctrl.Result, error) {
	next := budgetStatus(v, now)
	old := v.budget.Status
	r.export(v)
	wait := nextRollover(v, now)
	if !budgetStatusChanged(old, next) {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if onlySpend(old, next) {
		if since := now.Sub(r.lastWrite(req.NamespacedName)); since < budgetSpendWrite {
			return ctrl.Result{RequeueAfter: budgetSpendWrite - since}, nil
		}
	}
	out := v.budget.DeepCopy()
	out.Status = next
	if err := r.Client.Status().Update(ctx, out); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil
		case apierrors.IsConflict(err):
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the status of AgentBudget %s: %w", req.NamespacedName, err)
	}
	r.noteWrite(req.NamespacedName, now)
	r.crossings(ctx, out, old.Limits, next.Limits)
	v.budget = out
	return ctrl.Result{RequeueAfter: wait}, nil
}

// budgetStatus is the status of v at now.
func budgetStatus(v *budgetView, now time.Time) exagentv1.AgentBudgetStatus {
	out := *v.budget.Status.DeepCopy()
	out.ObservedGeneration = v.budget.Generation
	ready := metav1.Condition{Type: exagentv1.ConditionReady, Status: metav1.ConditionTrue, Reason: exagentv1.ReasonBudgetComputed,
		Message: "spend computed from the runs of the selected Agents", ObservedGeneration: v.budget.Generation}
	exhausted := metav1.Condition{Type: exagentv1.ConditionExhausted, Status: metav1.ConditionFalse, Reason: exagentv1.ReasonWithinBudget,
		Message: "no limit is used up", ObservedGeneration: v.budget.Generation}
	if v.invalid != "" {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, exagentv1.ReasonInvalidSelector, boundMessage(v.invalid)
		meta.SetStatusCondition(&out.Conditions, ready)
		meta.SetStatusCondition(&out.Conditions, exhausted)
		return out
	}
	day, month := metav1.NewTime(v.usage.DayStart), metav1.NewTime(v.usage.MonthStart)
	out.DayStart, out.MonthStart = &day, &month
	out.Spend = exagentv1.BudgetSpend{TokensToday: v.usage.TokensToday, RunsLastHour: v.usage.RunsLastHour,
		ConcurrentRuns: v.usage.Concurrent, CostThisMonth: loop.FormatNanos(v.usage.CostNanos)}
	out.Limits = limitUses(v.uses)
	var used []string
	for _, u := range v.uses {
		if u.Exhausted() {
			used = append(used, loop.BudgetMessage(v.budget.Namespace, v.budget.Name, u))
		}
	}
	if len(used) > 0 {
		exhausted.Status, exhausted.Reason = metav1.ConditionTrue, exagentv1.ReasonBudgetExhausted
		exhausted.Message = boundMessage(strings.Join(used, "; "))
	}
	meta.SetStatusCondition(&out.Conditions, ready)
	meta.SetStatusCondition(&out.Conditions, exhausted)
	return out
}

// limitUses is uses as the API writes them.
func limitUses(uses []loop.LimitUse) []exagentv1.BudgetLimitUse {
	out := make([]exagentv1.BudgetLimitUse, 0, len(uses))
	for _, u := range uses {
		l := exagentv1.BudgetLimitUse{Limit: u.Limit, Used: u.Format(u.Used), Max: u.Format(u.Max), Percent: u.Percent()}
		if !u.RollsOver.IsZero() {
			at := metav1.NewTime(u.RollsOver)
			l.RollsOverAt = &at
		}
		out = append(out, l)
	}
	return out
}

func budgetStatusChanged(old, next exagentv1.AgentBudgetStatus) bool {
	return !equality.Semantic.DeepEqual(old, next)
}

// onlySpend tells whether next differs from old only in amounts: no
// condition, percent step of ten, window or generation changed.
func onlySpend(old, next exagentv1.AgentBudgetStatus) bool {
	if old.ObservedGeneration != next.ObservedGeneration || len(old.Limits) != len(next.Limits) ||
		!equality.Semantic.DeepEqual(old.Conditions, next.Conditions) || !equality.Semantic.DeepEqual(old.DayStart, next.DayStart) {
		return false
	}
	for i := range old.Limits {
		if old.Limits[i].Limit != next.Limits[i].Limit || old.Limits[i].Max != next.Limits[i].Max ||
			old.Limits[i].Percent/10 != next.Limits[i].Percent/10 {
			return false
		}
	}
	return true
}

// nextRollover is when v's spend next changes by the clock alone.
func nextRollover(v *budgetView, now time.Time) time.Duration {
	var next time.Time
	for _, u := range v.uses {
		if !u.RollsOver.IsZero() && (next.IsZero() || u.RollsOver.Before(next)) {
			next = u.RollsOver
		}
	}
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), 0) + 20*time.Millisecond
}

// export sets the used-ratio gauge of each limit of v.
func (r *AgentBudgetReconciler) export(v *budgetView) {
	for _, u := range v.uses {
		budgetUsedRatio.WithLabelValues(v.budget.Namespace, v.budget.Name, u.Limit).Set(u.Ratio())
	}
}

// crossings records a Warning Event for each limit that crossed 80 % or
// 100 % since the status before, and counts the crossings of 100 %.
func (r *AgentBudgetReconciler) crossings(ctx context.Context, b *exagentv1.AgentBudget, before, after []exagentv1.BudgetLimitUse) {
	was := map[string]int32{}
	for _, l := range before {
		was[l.Limit] = l.Percent
	}
	for _, l := range after {
		p := was[l.Limit]
		switch {
		case l.Percent >= 100 && p < 100:
			budgetExhaustedTotal.WithLabelValues(b.Namespace, b.Name, l.Limit).Inc()
			r.Recorder.Eventf(b, nil, warning, exagentv1.EventBudgetExhausted, "Exhausted",
				"%s %s used %s (%d%%): new runs of the selected Agents wait BudgetExhausted", l.Limit, l.Max, l.Used, l.Percent)
		case l.Percent >= 80 && p < 80:
			r.Recorder.Eventf(b, nil, warning, exagentv1.EventBudgetNearlyExhausted, "NearlyExhausted",
				"%s %s used %s (%d%%)", l.Limit, l.Max, l.Used, l.Percent)
		}
	}
	logf.FromContext(ctx).V(1).Info("budget status written", "budget", client.ObjectKeyFromObject(b))
}

func (r *AgentBudgetReconciler) lastWrite(k types.NamespacedName) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written[k]
}

func (r *AgentBudgetReconciler) noteWrite(k types.NamespacedName, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written[k] = at
}

// forget drops a deleted budget's memory and its gauges.
func (r *AgentBudgetReconciler) forget(k types.NamespacedName) {
	r.mu.Lock()
	delete(r.written, k)
	r.mu.Unlock()
	for _, l := range []string{exagentv1.BudgetTokensPerDay, exagentv1.BudgetRunsPerHour, exagentv1.BudgetMaxConcurrentRuns, exagentv1.BudgetCostPerMonth} {
		budgetUsedRatio.DeleteLabelValues(k.Namespace, k.Name, l)
	}
}
