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
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
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
	"github.com/exagent-io/exagent/internal/executor"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/internal/life"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/model"
	"github.com/exagent-io/exagent/store"
	"github.com/exagent-io/exagent/tools"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agentruns,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=exagent.io,resources=agentruns/finalizers,verbs=update
// +kubebuilder:rbac:groups=exagent.io,resources=agentruns/status,verbs=get;update
// +kubebuilder:rbac:groups=exagent.io,resources=agents,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// conflictRetry is how soon a reconcile whose commit met a newer version retries.
const conflictRetry = 50 * time.Millisecond

// AgentRunReconciler runs AgentRuns: it owns a run by a fenced claim,
// commits each intent before dispatching its IO and each outcome before
// advancing, and hands runs back on pause, end or loss of its lease.
type AgentRunReconciler struct {
	Client client.Client
	// APIReader reads Secrets past the cache.
	APIReader client.Reader
	Store     *store.Store
	// Steps shape every status write (Write.Steps).
	Steps *store.CommitSteps
	// Segments reads the runs' sealed transcripts (nil: runs never seal).
	Segments *store.Segments
	Recorder events.EventRecorder
	Executor *executor.Executor
	Tools    *tools.Registry
	// ModelOptions are the process-wide model client settings.
	ModelOptions model.Options
	// MaxRateLimitWait bounds how long one model request waits out rate
	// limits (DefaultMaxRateLimitWait when zero); the run's deadline and
	// active time bound it too.
	MaxRateLimitWait time.Duration
	// Holder identifies this process in claims; unique per process start.
	Holder string
	Hooks  Hooks
	Clock  clock.PassiveClock
	// MaxConcurrentReconciles bounds the reconcile workers.
	MaxConcurrentReconciles int
	// Name of the controller (distinct per manager in tests that run several).
	Name string
	// ReleaseOnStop hands back, when the manager stops, the owned runs that
	// have no tool call left in flight after the drain (see releaser).
	ReleaseOnStop bool
	// DrainTimeout bounds how long the releaser waits for the results of
	// calls in flight at the stop (the executor's drain).
	DrainTimeout time.Duration
	// SkewGrace is how long past another holder's lease expiry this
	// process waits before it recovers the run: clocks of two hosts are
	// never exactly equal, and recovery is for dead owners only.
	SkewGrace time.Duration
	// Tracer traces model requests and tool calls (internal/telemetry; nil: none).
	Tracer *telemetry.Tracer
	// MaxTranscriptBytes caps the transcript limit of every run
	// (loop.EnvInput.MaxTranscriptBytes; 0: none).
	MaxTranscriptBytes int64
	// MaxWaitingRunsPerNamespace caps the Waiting runs of one namespace: a
	// run past it begins no wait, the model is told (wait_caps.go; 0: no cap).
	MaxWaitingRunsPerNamespace int
	// Shard is what this manager serves: a sharded manager's cache loses
	// a run that moved to another shard, which it hands over
	// (agentrun_moved.go).
	Shard shard.Serving
	// Callbacks makes the URLs of NewCallback calls (loop.EnvInput.Callbacks;
	// nil: the manager serves no callback listener).
	Callbacks *loop.CallbackIssuer
	// Namespaces are the namespaces served (Options.Namespaces).
	Namespaces served.Namespaces

	// life is the context given to SetupWithManager (the manager's): it
	// ends at the stop, before the controllers' own context does.
	life context.Context
	// mem is all this process keeps per run (runmemory.go).
	mem     *runMemory
	workers workers
	// budgetLocks serializes the budget check and claim per namespace (agentbudget_gate.go).
	budgetLocks budgetLocks
	events      chan event.GenericEvent
	// listed wakes the runs that waited for an MCP listing (mcpWakeSource).
	listed chan event.GenericEvent
	// restConfig and mapper are the manager's: the shared watches of
	// WaitFor calls impersonate runs' ServiceAccounts from the one and
	// resolve kinds with the other (wait_objects*.go).
	restConfig  *rest.Config
	mapper      meta.RESTMapper
	objectWaits *objectWatches
}

// SetupWithManager registers the controller, its watches and the executor.
func (r *AgentRunReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Name == "" {
		r.Name = "agentrun"
	}
	r.life = ctx
	r.restConfig, r.mapper = mgr.GetConfig(), mgr.GetRESTMapper()
	r.mem = newRunMemory(r.Store, r.Tracer)
	r.events = make(chan event.GenericEvent, 1024)
	if err := mgr.Add(r.Executor); err != nil {
		return fmt.Errorf("adding the executor: %w", err)
	}
	if r.ReleaseOnStop {
		if err := mgr.Add(releaser{r: r, timeout: 10 * time.Second, drain: r.DrainTimeout}); err != nil {
			return fmt.Errorf("adding the releaser: %w", err)
		}
	}
	// A changed Agent wakes exactly its runs (agentRuns).
	if err := index.Runs(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		For(&exagentv1.AgentRun{}).
		// The claims hear of a delete, a recovery or a cancel straight from
		// the informer, not after the run's turn in a long queue: jobs of a
		// lost claim must not start meanwhile.
		Watches(&exagentv1.AgentRun{}, r.claimWatcher()).
		Watches(&exagentv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(parentOfRun)).
		// An Agent's spec wakes its runs; its status (the Agent
		// controller's writes) does not: runs read it, never wait on it.
		Watches(&exagentv1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.runsOfAgent),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A turn's change may let the next turn of its conversation go; a
		// Conversation created or unsuspended, its waiting turns
		// (agentrun_conversation.go).
		Watches(&exagentv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(r.turnsOf),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: turnPhaseChanged})).
		Watches(&exagentv1.Conversation{}, handler.EnqueueRequestsFromMapFunc(r.turnsOf),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A new decision does not wake its run: applying it is a write of
		// the run (the decision controller resumes the run in that very
		// write), which the run's own watch reports; waking the run at the
		// decision's creation only makes its turn contend with the decision.
		Watches(&exagentv1.ApprovalDecision{}, handler.EnqueueRequestsFromMapFunc(runOfDecision),
			builder.WithPredicates(predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }})).
		// A budget raised or its window's status written, or a run that
		// ended, may let the runs waiting for a budget go (agentbudget_gate.go).
		Watches(&exagentv1.AgentBudget{}, handler.EnqueueRequestsFromMapFunc(r.budgetWaiters)).
		Watches(&exagentv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(r.budgetWaiters),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: runPhaseChanged, CreateFunc: func(event.CreateEvent) bool { return false }})).
		WatchesRawSource(source.Channel(r.events, ownerWork())).
		WatchesRawSource(r.mcpWakeSource()).
		WatchesRawSource(r.objectWaitSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1)}).
		Complete(quietConflicts{controller: r.Name, next: r})
}

func (r *AgentRunReconciler) runsOfAgent(ctx context.Context, o client.Object) []reconcile.Request {
	var runs exagentv1.AgentRunList
	if err := r.Client.List(ctx, &runs, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.AgentRef: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing runs of agent", "agent", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(runs.Items))
	for i := range runs.Items {
		if !runs.Items[i].Status.Phase.IsTerminal() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&runs.Items[i])})
		}
	}
	return out
}

// InFlight is how many model and tool calls of a run this process has
// running (for tests and diagnostics).
func (r *AgentRunReconciler) InFlight(name, namespace string) int {
	return r.mem.inbox.pending(types.NamespacedName{Namespace: namespace, Name: name})
}

func runOfDecision(_ context.Context, o client.Object) []reconcile.Request {
	d := o.(*exagentv1.ApprovalDecision)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.RunRef.Name}}}
}

// Reconcile follows one skeleton: load, run the phase functions in order
// until one stops, commit once, then do what the commit allows (events,
// IO dispatch) and ask for the next wake-up.
func (r *AgentRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.workers.enter() {
		return ctrl.Result{}, nil // stopped: the releaser owns what is left
	}
	defer r.workers.leave()
	defer r.mem.turns.take(req.NamespacedName)()
	sc, err := r.load(ctx, req.NamespacedName, r.Client)
	if err != nil || sc == nil {
		return ctrl.Result{}, err
	}
	if !sc.run.Status.KnownFormat() {
		return ctrl.Result{}, r.unknownFormat(ctx, sc.run) // unknown_format.go
	}
	res, err := r.turn(ctx, sc, nil)
	if errors.Is(err, store.ErrSummary) {
		// The cached copy of a waiting run is a summary: what this turn
		// would write is computed again from the run read past the cache.
		if sc, err = r.load(ctx, req.NamespacedName, r.APIReader); err != nil || sc == nil {
			return ctrl.Result{}, err
		}
		res, err = r.turn(ctx, sc, nil)
	}
	if err != nil {
		return r.abort(ctx, sc, err)
	}
	return res, nil
}

// turn runs the phase functions on a loaded scope in order until one
// stops, commits once, then does what the commit allows (events, IO
// dispatch) and asks for the next wake-up. committed, when set, runs right
// after the commit. An error is a phase's or the commit's, for abort.
func (r *AgentRunReconciler) turn(ctx context.Context, sc *scope, committed func(*exagentv1.AgentRun)) (ctrl.Result, error) {
	log := logf.FromContext(ctx).WithValues("phase", sc.run.Status.Phase, "holder", r.Holder)
	defer sc.releaseBudget() // the claim a budget let through is committed (or not) by now
	ctx = logf.IntoContext(ctx, log)

	for _, phase := range []phaseFunc{r.checkAgent, r.start, r.expire, r.wake, r.observeObjects, r.interruptTurn, r.replaceScheduled, r.recover, r.observeChildren, r.checkParent, r.waitTurn, r.budgetGate, r.claim, r.drive} {
		if err := phase(ctx, sc); err != nil {
			return ctrl.Result{}, err
		}
		if sc.stop {
			break
		}
	}
	r.modelWaitCondition(sc) // model_waits.go
	if sc.action.Kind == loop.ActRunTools {
		r.Hooks.beforeIntentCommit(ctx, sc.key, sc.action.Calls)
		if r.stopped(ctx) {
			return ctrl.Result{}, nil // stopped at the hook: nothing more happens
		}
	}
	if sc.childEnded {
		r.Hooks.beforeChildOutcomeCommit(ctx, sc.key)
		if r.stopped(ctx) {
			return ctrl.Result{}, nil
		}
	}
	if err := r.commit(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	if committed != nil {
		committed(sc.run)
	}
	r.publish(sc)
	if sc.action.Kind == loop.ActRunTools {
		r.Hooks.afterIntentCommit(ctx, sc.key, sc.action.Calls)
		if r.stopped(ctx) {
			return ctrl.Result{}, nil
		}
	}
	r.dispatch(sc)
	return ctrl.Result{RequeueAfter: r.nextWakeup(sc), Priority: r.priority(sc)}, nil
}

// stopped tells whether the manager is stopping: the reconcile's context
// or the one the manager was set up with has ended (controller-runtime
// cancels the controllers only after the other runnables stopped).
func (r *AgentRunReconciler) stopped(ctx context.Context) bool {
	return life.Stopping(ctx, r.life)
}

// commit writes the scope's status when it changed (or its condition
// overrides did), fenced when this process owned the run when it was read.
func (r *AgentRunReconciler) commit(ctx context.Context, sc *scope) error {
	if !sc.changed && !overridesChanged(sc.run.Status.Conditions, sc.overrides) {
		return nil
	}
	if sc.fence != nil && sc.status.Phase == exagentv1.PhaseRunning && sc.status.Claim != nil {
		// Every owner commit extends the lease: no extra write, and no
		// intent is ever committed with a lease about to run out.
		next, err := loop.Extend(sc.status, sc.env, *sc.fence, sc.now)
		if err != nil {
			return err
		}
		sc.status = next
	}
	written, err := r.Store.Commit(ctx, store.Write{Run: sc.run, Status: sc.status, Fence: sc.ownedFence, Now: sc.now,
		Overrides: sc.overrides, Steps: r.Steps.All(store.HeldSinks(sc.agent))})
	if err != nil {
		return err
	}
	sc.run = written
	r.committed(written)
	return nil
}

// committed is what this process keeps in memory after each of its
// commits of a run: which runs it owns (the releaser's list) and its view
// of the claims (the fast path's), both from the run as written.
func (r *AgentRunReconciler) committed(written *exagentv1.AgentRun) {
	r.mem.owned.track(written, r.Holder)
	r.mem.claims.committed(written, r.Holder)
	r.mem.lastTurns.ended(written)
}

// abort ends a reconcile whose transition or commit failed. A lost fence
// drops what this process learned; a conflict keeps the results for the
// retry; anything else is transient and retried with backoff.
func (r *AgentRunReconciler) abort(ctx context.Context, sc *scope, err error) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	if u, ok := store.AsUnstorable(err); ok {
		return r.endUnstorable(ctx, sc, u) // never retried: it can only be refused again
	}
	switch {
	case errors.Is(err, store.ErrFenceLost) || loop.IsKind(err, loop.KindStaleFence):
		log.Info("lost the run's claim; dropping what this attempt learned", "reason", err.Error(), "dropped", len(sc.results))
		return ctrl.Result{RequeueAfter: time.Second, Priority: new(0)}, nil
	case errors.Is(err, store.ErrConflict) || apierrors.IsConflict(err):
		r.mem.inbox.putBack(sc.key, sc.results)
		log.V(1).Info("run changed since it was read; retrying", "reason", err.Error())
		// The newer version's watch event usually arrives first; this is the
		// fallback, short because results may be waiting.
		return ctrl.Result{RequeueAfter: conflictRetry, Priority: r.priority(sc)}, nil
	}
	r.mem.inbox.putBack(sc.key, sc.results)
	return ctrl.Result{}, err
}

// nextWakeup is the RequeueAfter: before the lease needs renewing while IO
// is in flight, otherwise the engine's next clock instant (expiry,
// deadline, a lease to recover), or nothing.
func (r *AgentRunReconciler) nextWakeup(sc *scope) time.Duration {
	if sc.requeueAfter > 0 {
		return sc.requeueAfter
	}
	if sc.env == nil {
		return 0 // nothing can run without a valid Agent; its watch wakes the run
	}
	var next time.Time
	if at, ok := loop.Wakeup(sc.run.Status, sc.env); ok {
		next = at
	}
	if c := sc.run.Status.Claim; c != nil && c.Holder == r.Holder && r.mem.inbox.pending(sc.key) > 0 {
		if at := renewAt(c, sc.env); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if next.IsZero() {
		return 0
	}
	wait := next.Sub(r.Clock.Now())
	if wait <= 0 && !sc.changed {
		// The instant has passed and this reconcile could not act on it
		// (e.g. active time ran out while IO is in flight: the engine acts
		// when the result is recorded). Do not spin; the result's event or
		// this slower tick brings the run back.
		return idleRetry
	}
	// A little past the instant, so the engine sees it as reached.
	return max(wait, 0) + 20*time.Millisecond
}

// idleRetry is the wake-up of a run whose clock instant passed with nothing to do.
const idleRetry = time.Second

// renewAt is when an owner with IO in flight renews: half the lease before
// it expires, so one slow write cannot lose it.
func renewAt(c *exagentv1.Claim, env *loop.Env) time.Time {
	return c.LeaseExpiresAt.Add(-env.LeaseDuration() / 2)
}

func overridesChanged(have, want []metav1.Condition) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Type == w.Type {
				found = h.Status == w.Status && h.Reason == w.Reason && h.Message == w.Message
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}
