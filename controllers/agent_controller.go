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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/tools"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agents/status,verbs=get;update

// DefaultAgentRecheckInterval is how often a Ready Agent is checked again
// (--agent-recheck-interval): what it names can break without its spec
// changing (a Secret deleted, a server gone), and nothing is watched that
// would say so. A check costs a GET per Secret it names and, when a
// listing is older than half of it, one tools/list per MCP server.
const DefaultAgentRecheckInterval = 5 * time.Minute

// indexDelegates indexes Agents by the Agents their delegation tools name,
// so an Agent created or deleted wakes exactly the Agents delegating to it.
const indexDelegates = "spec.tools.agent.agentRef.name"

// AgentReconciler says whether each Agent works: it checks what the Agent
// names — the Secrets of its model, tools and sinks, its schemas, its MCP
// servers' listings, the Agents it delegates to — and writes
// status.conditions Ready and status.tools, only when they changed.
// Ready is information: no run waits on it (a run's own checks stand).
type AgentReconciler struct {
	// Owner says which of these objects this manager writes (shards.go).
	Owner  Ownership
	Client client.Client
	// APIReader reads Secrets past the cache.
	APIReader client.Reader
	// MCP lists MCP servers beside the workers (shared with the runs).
	MCP *tools.MCPCatalog
	// Clock stamps the conditions and ages the listings (the real clock when nil).
	Clock clock.PassiveClock
	// Recheck is how often a Ready Agent is checked again
	// (DefaultAgentRecheckInterval when zero); one not Ready sooner.
	Recheck time.Duration
	// Name of the controller (distinct per manager in tests that run several).
	Name string
	// Hooks are test hooks; nil in production.
	Hooks Hooks

	listed chan event.GenericEvent
}

// SetupWithManager registers the controller and its watches.
func (r *AgentReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Recheck <= 0 {
		r.Recheck = DefaultAgentRecheckInterval
	}
	if r.Name == "" {
		r.Name = "agent"
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &exagentv1.Agent{}, indexDelegates, func(o client.Object) []string {
		var out []string
		for _, t := range o.(*exagentv1.Agent).Spec.Tools {
			if t.Agent != nil {
				out = append(out, t.Agent.AgentRef.Name)
			}
		}
		return out
	}); err != nil {
		return fmt.Errorf("indexing Agents by their delegates: %w", err)
	}
	r.listed = make(chan event.GenericEvent, 1024)
	if r.MCP != nil {
		r.MCP.SetWake(tools.WaiterAgent, r.wake)
	}
	// The Agent's own status writes change no generation: they wake nothing.
	createOrDelete := predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		For(&exagentv1.Agent{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&exagentv1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.delegatorsOf), builder.WithPredicates(createOrDelete)).
		WatchesRawSource(source.Channel(r.listed, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(quietConflicts{controller: r.Name, next: ownedOnly(r.Owner, shard.AgentKey, r)})
}

// wake enqueues the Agents whose MCP listing came back. A wake is a hint:
// when the channel is full it is dropped and the Agent's requeue brings
// it back; the refresher never blocks on this controller.
func (r *AgentReconciler) wake(agents []types.NamespacedName) {
	for _, k := range agents {
		ev := event.GenericEvent{Object: &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace}}}
		select {
		case r.listed <- ev:
		default:
		}
	}
}

func (r *AgentReconciler) delegatorsOf(ctx context.Context, o client.Object) []reconcile.Request {
	var agents exagentv1.AgentList
	if err := r.Client.List(ctx, &agents, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexDelegates: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing the Agents that delegate to an Agent", "agent", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(agents.Items))
	for i := range agents.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&agents.Items[i])})
	}
	return out
}

// Reconcile checks the Agent: load, run the checks in order, write the
// status once when it changed, and come back on the period (sooner while
// it is not Ready, or when a listing it waits for is due).
func (r *AgentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	agent := &exagentv1.Agent{}
	if err := r.Client.Get(ctx, req.NamespacedName, agent); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sc := &agentScope{key: req.NamespacedName, now: r.Clock.Now(), agent: agent,
		secrets: newSecretReads(r.APIReader, req.Namespace), found: agentFindings{generation: agent.Generation}}
	for _, check := range []agentCheck{r.checkConfig, r.checkModel, r.checkTools, r.checkNotify} {
		if err := check(ctx, sc); err != nil {
			return ctrl.Result{}, err
		}
	}
	next := agentStatus(agent.Status, sc.found, sc.now)
	wrote := agentStatusChanged(agent.Status, next)
	if wrote {
		out := agent.DeepCopy()
		out.Status = next
		// An Update carrying the resourceVersion read: a check made on an
		// older spec, or racing another manager's, never overwrites a newer one.
		if err := r.Client.Status().Update(ctx, out); err != nil {
			switch {
			case apierrors.IsNotFound(err):
				return ctrl.Result{}, nil // deleted meanwhile
			case apierrors.IsConflict(err):
				return ctrl.Result{RequeueAfter: conflictRetry}, nil // checked again on the newer version
			}
			return ctrl.Result{}, fmt.Errorf("writing the status of Agent %s: %w", req.NamespacedName, err)
		}
	}
	r.Hooks.agentChecked(req.NamespacedName, wrote)
	return ctrl.Result{RequeueAfter: agentRecheck(next, sc.soonest, r.Recheck, agentSpread(agent.UID), sc.now)}, nil
}
