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
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// AgentBudgets hold runs in two places (loop/budget.go):
//
//   - before a Queued run is claimed (budgetGate): a run over a budget
//     stays Queued with reason BudgetExhausted (loop.WaitForBudget) — no
//     claim, no IO, nothing charged — and looks again when the window
//     rolls over (a requeue through the injected clock's time), when an
//     AgentBudget of its namespace changes, or when a run of the namespace
//     changes phase (a concurrent run ended);
//   - before a running run's next step sends its model request
//     (budgetStepHold): tokens and cost only; the run is handed back
//     between the two steps (loop.Env.WithBudgetHold).
//
// Within one manager the check and the claim are serialized per namespace
// (budgetLocks) and count this process's own claims the cache has not
// shown yet (Store.Fresher), so a burst of runs cannot pass
// maxConcurrentRuns or runsPerHour through cache lag. Another replica's
// claim in flight is not seen: with N replicas a limit may be passed by up
// to N-1 claims made at the same instant (docs/operating.md, "Budgets").

// budgetLocks serializes the budget check and the claim's commit per
// namespace within this process.
type budgetLocks struct {
	mu sync.Mutex
	ns map[string]*sync.Mutex
}

func (l *budgetLocks) lock(namespace string) func() {
	l.mu.Lock()
	if l.ns == nil {
		l.ns = map[string]*sync.Mutex{}
	}
	m := l.ns[namespace]
	if m == nil {
		m = &sync.Mutex{}
		l.ns[namespace] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// budgetGate keeps a Queued run from being claimed while an AgentBudget
// selecting its Agent is used up. A run it lets through is claimed under
// the namespace's lock, released after the claim's commit (turn).
func (r *AgentRunReconciler) budgetGate(ctx context.Context, sc *scope) error {
	if sc.fence != nil || sc.noIO || sc.status.Phase != exagentv1.PhaseQueued {
		return nil // an Approved run resumes: it was counted when it started
	}
	unlock := r.budgetLocks.lock(sc.key.Namespace)
	views, err := budgetViews(ctx, r.Client, sc.key.Namespace, sc.now, r.Store.Fresher)
	if err != nil || len(views) == 0 {
		unlock()
		return err
	}
	gate := loop.GateStart
	if sc.status.StartedAt != nil {
		gate = loop.GateResume // handed back before: counted as a start already
	}
	msg, wait, held := budgetHold(views, sc.run.Spec.AgentRef.Name, gate, sc.now)
	if !held {
		sc.unlockBudget = unlock
		return nil
	}
	unlock()
	if sc.status.Reason != exagentv1.ReasonBudgetExhausted || sc.status.Message != msg {
		next, err := loop.WaitForBudget(sc.status, msg)
		if err != nil {
			return fmt.Errorf("holding the run for its budget: %w", err)
		}
		if sc.status.Reason != exagentv1.ReasonBudgetExhausted {
			sc.note(exagentv1.EventBudgetExhausted, warning, "%s", msg)
		}
		sc.set(next)
	}
	sc.stop = true
	sc.requeueAfter = wait
	return nil
}

// budgetStepHold is the Env a running run's step is taken with: one that
// holds it before its next model request when an AgentBudget's tokens or
// cost are used up (loop.Env.WithBudgetHold). A run claimed in this very
// reconcile passed the gate a moment ago.
// wait is when a run the step hands back looks again.
func (r *AgentRunReconciler) budgetStepHold(ctx context.Context, sc *scope) (*loop.Env, time.Duration, error) {
	if sc.ownedFence == nil || sc.inFlight > 0 {
		return sc.env, 0, nil
	}
	views, err := budgetViews(ctx, r.Client, sc.key.Namespace, sc.now, r.Store.Fresher)
	if err != nil || len(views) == 0 {
		return sc.env, 0, err
	}
	msg, wait, held := budgetHold(views, sc.run.Spec.AgentRef.Name, loop.GateStep, sc.now)
	if !held {
		return sc.env, 0, nil
	}
	return sc.env.WithBudgetHold(msg), wait, nil
}

// budgetWaiters wakes the runs of a namespace that wait for a budget: an
// AgentBudget changed (raised, its status written), or a run changed
// phase (a concurrent run ended, a run started).
func (r *AgentRunReconciler) budgetWaiters(ctx context.Context, o client.Object) []reconcile.Request {
	if _, ok := o.(*exagentv1.AgentRun); ok {
		var budgets exagentv1.AgentBudgetList
		if err := r.Client.List(ctx, &budgets, client.InNamespace(o.GetNamespace())); err != nil || len(budgets.Items) == 0 {
			return nil
		}
	}
	var runs exagentv1.AgentRunList
	if err := r.Client.List(ctx, &runs, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range runs.Items {
		run := &runs.Items[i]
		if run.Status.Phase == exagentv1.PhaseQueued && run.Status.Reason == exagentv1.ReasonBudgetExhausted && run.Name != o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(run)})
		}
	}
	return out
}

// runPhaseChanged passes a run's update that changed its phase.
func runPhaseChanged(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*exagentv1.AgentRun)
	cur, ok2 := e.ObjectNew.(*exagentv1.AgentRun)
	return ok1 && ok2 && old.Status.Phase != cur.Status.Phase
}
