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

package retention

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/internal/life"
	"github.com/exagent-io/exagent/internal/pool"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

var (
	retentionDeletedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_retention_deleted_runs_total",
		Help: "Ended runs retention deleted (with their segments and decisions), by why: TTL, KeepLast, or Root (a child run deleted with its root).",
	}, []string{"reason"})
	archiveAttemptsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_archive_attempts_total",
		Help: "Attempts to send a run's archive to its Agent's retention.archive, by outcome (Delivered, Failed: the run is held and sent again with backoff).",
	}, []string{"outcome"})
)

func init() { metrics.Registry.MustRegister(retentionDeletedTotal, archiveAttemptsTotal) }

// Why retention deleted a run (exagent_retention_deleted_runs_total).
const (
	deletedTTL      = "TTL"
	deletedKeepLast = "KeepLast"
	deletedWithRoot = "Root"
)

// Defaults of the retention workers.
const (
	// DefaultWorkers is how many runs retention archives and deletes at
	// once: each archive holds its run's chain in memory while it is sent
	// (docs/retention.md), so this bounds memory.
	DefaultWorkers = 2
	// DefaultArchiveTimeout bounds one attempt to send an archive.
	DefaultArchiveTimeout = 2 * time.Minute
)

// retentionErrorRetry is how soon work that failed (the apiserver, not
// the sink) is tried again.
const retentionErrorRetry = 2 * time.Second

// lateOutcomeWindow is how long after a call started retention keeps a
// Cancelled run whose call was in flight at the cancel and has no
// outcome (loop.Reapable): longer than one call's IO may take at the
// tools' default timeouts (http 30s, mcp 60s) with room for a slow one.
// Where the IO runs in this process, retention waits for its journal
// however long it takes (reaper.running).
const lateOutcomeWindow = 10 * time.Minute

// Config is what the reaper works with; zero values take the defaults.
type Config struct {
	// Client reads the cache: runs, Agents, decisions (with the
	// index.AgentRef and index.RunRef indexes set up).
	Client client.Client
	// Reader reads past the cache: the run as stored, its children, Secrets.
	Reader client.Reader
	// Store journals archive attempts with Steps; Segments reads a run's
	// chain for its archive (nil: no segments).
	Store    *store.Store
	Steps    *store.CommitSteps
	Segments *store.Segments
	// Recorder writes the reaper's Events; Informers are the cache's, whose
	// run and Agent events queue the reaper's work.
	Recorder  events.EventRecorder
	Informers cache.Informers
	// Clock is the controllers' (a fake one in tests).
	Clock clock.PassiveClock
	// HTTP sends archives (egress-checked).
	HTTP  *http.Client
	Retry loop.ArchiveRetry
	// DefaultTTL is --default-ttl-seconds-after-finished (0: none).
	DefaultTTL time.Duration
	// Timeout bounds one archive attempt (DefaultArchiveTimeout when 0).
	Timeout time.Duration
	// Workers is how many runs are reaped at once (DefaultWorkers when 0),
	// shared fairly among namespaces.
	Workers int
	// QueueName names the work queue (its metrics).
	QueueName string
	// Running says whether this process still has IO of the run in
	// flight, or results of it not yet journaled.
	Running func(types.NamespacedName) bool
	// Owns says whether this manager's shard owns the object of a
	// namespace placed by key (controllers.Ownership.Owns): every shard
	// caches every Conversation, and only its owner reaps it. nil: all.
	Owns func(ctx context.Context, namespace, key string) (bool, error)
	// BeforeArchiveJournal, a test hook, runs when an archive attempt
	// returned, before it is journaled; an error abandons the work there,
	// as a crash would.
	BeforeArchiveJournal func(ctx context.Context, run types.NamespacedName, sent error) error
	// Life is the manager's context: it ends at the stop, before the
	// runnables' own contexts.
	Life context.Context
}

// New builds the reaper, a leader-only manager.Runnable.
func New(c Config) *Reaper {
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &Reaper{
		client: c.Client, reader: c.Reader, store: c.Store, steps: c.Steps, segments: c.Segments,
		recorder: c.Recorder, clock: clk, http: c.HTTP, retry: c.Retry.WithDefaults(), defaultTTL: c.DefaultTTL,
		timeout: c.Timeout, workers: c.Workers, beforeJournal: c.BeforeArchiveJournal, informer: c.Informers,
		life: c.Life, queue: newReaperQueue(c.QueueName, clk), busy: map[reapItem]bool{},
		running: c.Running, lateWindow: lateOutcomeWindow, owns: c.Owns,
	}
	if r.running == nil {
		r.running = func(types.NamespacedName) bool { return false }
	}
	if r.workers <= 0 {
		r.workers = DefaultWorkers
	}
	if r.timeout <= 0 {
		r.timeout = DefaultArchiveTimeout
	}
	r.fair = newFairShare(r.workers)
	return r
}

// Reaper deletes the ended runs whose retention says so — past their TTL,
// or no longer among their Agent's keepLast newest — with their segments
// and decisions, archiving each first when its Agent has
// retention.archive. Like the notification Deliverer (internal/notify)
// it is its own bounded pool with its own queue: an archive is network
// IO that may be large, so it never runs on a reconcile worker, and a
// failing sink holds only its runs.
//
// Every decision is made from the stored run (read past the cache before
// anything is sent or deleted) and the clock the controllers share; what
// the reaper keeps in memory is only its queue, so a restarted process
// finds every due run again from the informer's initial list.
type Reaper struct {
	client     client.Client // the cache: runs, Agents, decisions
	reader     client.Reader // past the cache: the run as stored, its children, Secrets
	store      *store.Store
	steps      *store.CommitSteps
	segments   *store.Segments
	recorder   events.EventRecorder
	clock      clock.PassiveClock
	http       *http.Client
	retry      loop.ArchiveRetry
	defaultTTL time.Duration
	timeout    time.Duration
	workers    int
	// beforeJournal is Config.BeforeArchiveJournal.
	beforeJournal func(ctx context.Context, run types.NamespacedName, sent error) error
	informer      cache.Informers
	queue         workqueue.TypedDelayingInterface[reapItem]
	// fair shares the workers among namespaces (retention_fair.go).
	fair *fairShare
	// running says whether this process still has IO of the run in
	// flight, or its results not yet journaled (the run reconciler's
	// inbox); lateWindow is loop.Reapable's window for the others.
	running func(types.NamespacedName) bool
	// owns is Config.Owns.
	owns       func(ctx context.Context, namespace, key string) (bool, error)
	lateWindow time.Duration
	// life is the manager's context: it ends at the stop, before the
	// runnables' own contexts.
	life context.Context

	mu   sync.Mutex
	busy map[reapItem]bool
}

// reapItem is one unit of the reaper's queue: a run to check against its
// TTL, an Agent whose history limit to apply, or a Conversation to check
// against its TTL (retention_conversation.go).
type reapItem struct {
	kind itemKind
	key  types.NamespacedName
}

// itemKind is what a reapItem's key names.
type itemKind uint8

const (
	itemRun itemKind = iota
	itemAgent
	itemConversation
)

func (k itemKind) String() string {
	switch k {
	case itemAgent:
		return "Agent"
	case itemConversation:
		return "Conversation"
	}
	return "AgentRun"
}

// newReaperQueue is the reaper's queue, on the controllers' clock when it
// can wait (a fake clock in tests: a TTL passes when the test steps it).
func newReaperQueue(name string, c clock.PassiveClock) workqueue.TypedDelayingInterface[reapItem] {
	cfg := workqueue.TypedDelayingQueueConfig[reapItem]{Name: name}
	if wc, ok := c.(clock.WithTicker); ok {
		cfg.Clock = wc
	}
	return workqueue.NewTypedDelayingQueueWithConfig(cfg)
}

// NeedLeaderElection: one replica deletes (two would only race to the
// same deletes; an archive sent twice carries the same id).
func (r *Reaper) NeedLeaderElection() bool { return true }

// Start watches runs and Agents and works the queue until ctx ends.
func (r *Reaper) Start(ctx context.Context) error {
	runs, err := r.informer.GetInformer(ctx, &exagentv1.AgentRun{})
	if err != nil {
		return fmt.Errorf("retention: informer of AgentRuns: %w", err)
	}
	runReg, err := runs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.runChanged(o) },
		UpdateFunc: func(_, o any) { r.runChanged(o) },
	})
	if err != nil {
		return fmt.Errorf("retention: watching AgentRuns: %w", err)
	}
	defer func() { _ = runs.RemoveEventHandler(runReg) }()
	agents, err := r.informer.GetInformer(ctx, &exagentv1.Agent{})
	if err != nil {
		return fmt.Errorf("retention: informer of Agents: %w", err)
	}
	agentReg, err := agents.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { r.agentChanged(o) },
		UpdateFunc: func(old, o any) {
			a, okA := old.(*exagentv1.Agent)
			b, okB := o.(*exagentv1.Agent)
			if !okA || !okB || a.Generation != b.Generation {
				r.agentChanged(o)
			}
		},
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			r.agentChanged(o)
		},
	})
	if err != nil {
		return fmt.Errorf("retention: watching Agents: %w", err)
	}
	defer func() { _ = agents.RemoveEventHandler(agentReg) }()
	convs, err := r.informer.GetInformer(ctx, &exagentv1.Conversation{})
	if err != nil {
		return fmt.Errorf("retention: informer of Conversations: %w", err)
	}
	convReg, err := convs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.conversationChanged(o) },
		UpdateFunc: func(_, o any) { r.conversationChanged(o) },
		DeleteFunc: func(o any) { r.conversationDeleted(o) },
	})
	if err != nil {
		return fmt.Errorf("retention: watching Conversations: %w", err)
	}
	defer func() { _ = convs.RemoveEventHandler(convReg) }()
	pool.Run(ctx, r.workers, r.queue.ShutDown, r.work)
	return nil
}

// runChanged queues an ended run (its TTL) and its Agent (its history
// limit); for an ended child, its root instead, which waits for its tree
// to end before it is deleted with it; for an ended turn, its
// conversation (a turn's later writes — a notification's journal, a late
// outcome — may be what its conversation waits for).
func (r *Reaper) runChanged(o any) {
	run, ok := o.(*exagentv1.AgentRun)
	if !ok || !run.Status.Phase.IsTerminal() {
		return
	}
	if ref := run.Spec.ConversationRef; ref != nil {
		r.queue.Add(reapItem{kind: itemConversation, key: types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}})
		return
	}
	if d := run.Spec.Delegation; d != nil {
		root := &exagentv1.AgentRun{}
		if err := r.client.Get(context.Background(), types.NamespacedName{Namespace: run.Namespace, Name: d.Root.Name}, root); err == nil &&
			string(root.UID) == d.Root.UID && root.Spec.Delegation == nil {
			r.runChanged(root)
		}
		return
	}
	r.queue.Add(reapItem{key: client.ObjectKeyFromObject(run)})
	agent := &exagentv1.Agent{}
	if err := r.client.Get(context.Background(), types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}, agent); err == nil &&
		agent.Spec.Retention.KeepLast != nil {
		r.queue.Add(reapItem{kind: itemAgent, key: client.ObjectKeyFromObject(agent)})
	}
}

// agentChanged queues an Agent whose spec changed (or that was created or
// deleted): its history limit, and each of its ended runs and of its
// conversations, whose TTL and archive may have changed with it.
func (r *Reaper) agentChanged(o any) {
	agent, ok := o.(*exagentv1.Agent)
	if !ok {
		return
	}
	r.queue.Add(reapItem{kind: itemAgent, key: client.ObjectKeyFromObject(agent)})
	r.queueConversationsOf(agent)
	var runs exagentv1.AgentRunList
	if err := r.client.List(context.Background(), &runs, client.InNamespace(agent.Namespace),
		client.MatchingFields{index.AgentRef: agent.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range runs.Items {
		if run := &runs.Items[i]; run.Status.Phase.IsTerminal() && run.Spec.Delegation == nil && run.Spec.ConversationRef == nil {
			r.queue.Add(reapItem{key: client.ObjectKeyFromObject(run)})
		}
	}
}

func (r *Reaper) work(ctx context.Context) bool {
	item, fromQueue, quit := r.fair.next(r.queue)
	if quit {
		return false
	}
	defer r.fair.done(item)
	if fromQueue {
		defer r.queue.Done(item)
	}
	if life.Stopping(ctx, r.life) {
		return true // stopping: what is left is found again at the next start
	}
	var (
		after time.Duration
		err   error
	)
	switch item.kind {
	case itemAgent:
		after, err = r.processAgent(ctx, item.key)
	case itemConversation:
		after, err = r.processConversation(ctx, item.key)
	default:
		after, err = r.processRun(ctx, item.key)
	}
	switch {
	case life.Stopping(ctx, r.life):
	case errors.Is(err, errRunChanged):
		r.queue.Add(item)
	case err != nil:
		logf.FromContext(ctx).Info("retention: not done; retrying", "kind", item.kind.String(), "key", item.key, "error", err.Error())
		r.queue.AddAfter(item, retentionErrorRetry)
	case after > 0:
		r.queue.AddAfter(item, after)
	}
	return true
}

// processRun deletes an ended root run whose TTL has passed, or says when
// to look again.
func (r *Reaper) processRun(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	run := &exagentv1.AgentRun{}
	if err := r.client.Get(ctx, key, run); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if run.Spec.Delegation != nil {
		return 0, nil // deleted with its root
	}
	if run.Spec.ConversationRef != nil {
		return 0, nil // a turn goes with its conversation (retention_conversation.go)
	}
	ret := r.retentionOf(ctx, run)
	at, ok := loop.TTLExpiry(&run.Status, run.CreationTimestamp.Time, ret)
	if !ok {
		return 0, nil // no TTL (a history limit is the Agent's item)
	}
	if now := r.clock.Now(); now.Before(at) {
		return at.Sub(now), nil
	}
	if r.keptFromGitOps(run, ret, false) {
		return 0, nil // an Agent or flag change brings it back (agentChanged)
	}
	return r.reap(ctx, run, deletedTTL)
}

// keptFromGitOps tells, with a Warning Event on the run, when retention
// leaves a due run alone because a GitOps tool manages it
// (loop.KeptFromGitOps).
func (r *Reaper) keptFromGitOps(run *exagentv1.AgentRun, ret loop.Retention, byKeepLast bool) bool {
	why, kept := loop.KeptFromGitOps(run.Labels, run.Annotations, ret, byKeepLast)
	if !kept {
		return false
	}
	logf.FromContext(r.life).V(1).Info("retention: the run is due but a GitOps tool manages it", "run", run.Name, "namespace", run.Namespace)
	if r.recorder != nil {
		r.recorder.Eventf(run, nil, corev1.EventTypeWarning, exagentv1.ReasonRetentionGitOpsManaged, exagentv1.ReasonRetentionGitOpsManaged, "%s", why)
	}
	return true
}

// processAgent applies an Agent's history limit: its ended root runs
// past the keepLast newest are deleted, oldest first; then its idle
// conversations past the keepLast newest (counted apart, each as one).
func (r *Reaper) processAgent(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	agent := &exagentv1.Agent{}
	if err := r.client.Get(ctx, key, agent); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	keep := agent.Spec.Retention.KeepLast
	if keep == nil {
		return 0, nil
	}
	var runs exagentv1.AgentRunList
	if err := r.client.List(ctx, &runs, client.InNamespace(key.Namespace),
		client.MatchingFields{index.AgentRef: key.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("listing the runs of agent %s: %w", key, err)
	}
	var (
		ended []loop.EndedRun
		refs  []*exagentv1.AgentRun
	)
	for i := range runs.Items {
		run := &runs.Items[i]
		if run.Spec.Delegation != nil || run.Spec.ConversationRef != nil {
			continue // a child goes with its root, a turn with its conversation
		}
		if at, ok := loop.EndedAt(&run.Status, run.CreationTimestamp.Time); ok {
			ended = append(ended, loop.EndedRun{Name: run.Name, Created: run.CreationTimestamp.Time, Ended: at})
			refs = append(refs, run)
		}
	}
	var next time.Duration
	for _, i := range loop.BeyondKeepLast(ended, int(*keep)) {
		if ctx.Err() != nil {
			return 0, nil
		}
		if r.keptFromGitOps(refs[i], loop.Retention{}, true) {
			continue
		}
		after, err := r.reap(ctx, refs[i].DeepCopy(), deletedKeepLast)
		if err != nil {
			return 0, err
		}
		next = sooner(next, after)
	}
	if ctx.Err() != nil {
		return 0, nil
	}
	after, err := r.keepLastConversations(ctx, agent, int(*keep))
	return sooner(next, after), err
}

// sooner is the sooner of two waits, 0 being none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// retentionOf is the run's retention: its spec, its Agent's (from the
// cache; none when the Agent is gone) and the manager's default TTL.
func (r *Reaper) retentionOf(ctx context.Context, run *exagentv1.AgentRun) loop.Retention {
	agent := r.agentOf(ctx, run)
	var spec *exagentv1.RetentionSpec
	if agent != nil {
		spec = &agent.Spec.Retention
	}
	return loop.ResolveRetention(&run.Spec, spec, r.defaultTTL)
}

func (r *Reaper) agentOf(ctx context.Context, run *exagentv1.AgentRun) *exagentv1.Agent {
	agent := &exagentv1.Agent{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			logf.FromContext(ctx).Info("retention: reading the run's Agent", "run", run.Name, "error", err.Error())
		}
		return nil
	}
	return agent
}

// take marks a run (or conversation) as being reaped by this worker;
// false when another worker is at it (a run item and its Agent's item may
// meet on one run).
func (r *Reaper) take(key reapItem) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[key] {
		return false
	}
	r.busy[key] = true
	return true
}

func (r *Reaper) release(key reapItem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, key)
}
