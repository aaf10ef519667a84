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
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/callbacks"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/eventqueue"
	"github.com/exagent-io/exagent/internal/executor"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/model"
	"github.com/exagent-io/exagent/retention"
	"github.com/exagent-io/exagent/store"
	"github.com/exagent-io/exagent/tools"
	"github.com/exagent-io/exagent/triggers"
)

// Options configure the controllers of one manager.
type Options struct {
	// Holder identifies this process in claims; NewHolder() when empty.
	Holder string
	// MaxConcurrentReconciles of the run controller (DefaultMaxConcurrentReconciles).
	MaxConcurrentReconciles int
	// MaxConcurrentDecisions is the decision controller's workers
	// (DefaultMaxConcurrentDecisions).
	MaxConcurrentDecisions int
	// Executor limits.
	MaxInFlight int
	PerEndpoint int
	// ModelTimeout bounds one model request.
	ModelTimeout time.Duration
	// ModelMaxRateLimitWait bounds how long one model request waits out
	// rate limits (DefaultMaxRateLimitWait when zero).
	ModelMaxRateLimitWait time.Duration
	// HTTPClient is shared by model, http tool and MCP requests; built on
	// an egress.Transport under Egress when nil (a client given here is
	// used as it is: it is the caller's to dial under a policy).
	HTTPClient *http.Client
	// Egress is the policy every outbound connection is checked against at
	// dial time (docs/tenancy.md, "Egress"); egress.Default() when nil —
	// every default deny in force, loopback included.
	Egress *egress.Policy
	// EgressAllowLists widen Egress per namespace (the platform team's
	// ConfigMap); none when nil.
	EgressAllowLists egress.AllowLists
	// Verifier overrides the SubjectAccessReview verifier (tests only).
	Verifier DecisionVerifier
	// Signer, when set, makes the decision re-check require the admission
	// webhook's seal (authz.Signer). It also signs callback tokens.
	Signer *authz.Signer
	// CallbackBaseURL is the trigger listener's URL as third parties reach
	// it (--callback-base-url): with a Signer, NewCallback makes URLs
	// under it and Controllers.Callbacks serves them; empty: NewCallback
	// is a failed call saying the manager serves no callback listener.
	CallbackBaseURL string
	// ManagerIdentity is the manager's own username, which never decides;
	// asked of the apiserver (authz.Self) when empty.
	ManagerIdentity string
	// Hooks are test hooks; nil in production.
	Hooks Hooks
	// ReleaseOnStop hands owned runs back when the manager stops (see releaser).
	ReleaseOnStop bool
	// DrainTimeout is how long, when the manager stops, model and tool calls
	// already running go on; with ReleaseOnStop their results are committed
	// and the run handed back (see releaser). 0: they are cancelled at once.
	DrainTimeout time.Duration
	// LeaseSkewGrace is how long past another holder's lease expiry a run
	// is left alone before it is recovered (clock skew between hosts);
	// DefaultLeaseSkewGrace when zero, none when negative.
	LeaseSkewGrace time.Duration
	// Clock drives every time decision of the controllers (tests inject a
	// fake one); the real clock when nil.
	Clock clock.PassiveClock
	// NameSuffix makes controller names unique when several managers share
	// one process (tests).
	NameSuffix string
	// NotifyWorkers bounds the notification deliveries running at once (default 4).
	NotifyWorkers int
	// NotifyRetry bounds the attempts of one notification (notify.Retry defaults).
	NotifyRetry notify.Retry
	// UIURLTemplate links every notification to the run's page (the
	// manager's --ui-url-template; empty: no link).
	UIURLTemplate notify.URLTemplate
	// NotifyHTTPClient sends notifications (default: its own egress
	// transport under Egress, so a slow sink never holds the tools'
	// connections).
	NotifyHTTPClient *http.Client
	// Tracer traces attempts, model requests and tool calls (nil: no traces).
	Tracer *telemetry.Tracer
	// HotStatusBytes is the budget of a run's encoded status; what does not
	// fit is sealed into AgentRunSegments (loop.DefaultHotBytes when 0).
	HotStatusBytes int
	// SealValueBytes: one message content, argument or result larger than
	// this is sealed at once (loop.DefaultValueBytes when 0).
	SealValueBytes int
	// SegmentCacheBytes bounds the segments kept in memory (DefaultSegmentCacheBytes when 0).
	SegmentCacheBytes int
	// MaxTranscriptBytes caps every run's limits.maxTranscriptBytes
	// (--max-transcript-bytes): a run gets the lower of it and what its
	// Agent asks for. 0: no cap beyond the Agent's own limit.
	MaxTranscriptBytes int64
	// MaxWaitingRunsPerNamespace caps the Waiting runs of one namespace
	// (--max-waiting-runs-per-namespace, DefaultMaxWaitingRunsPerNamespace
	// by default; 0: no cap).
	MaxWaitingRunsPerNamespace int
	// RunMetrics registers the run gauges (exagent_runs, pending approvals,
	// uncertain calls) computed from this manager's cache at each scrape.
	RunMetrics bool
	// MCPListConcurrency bounds the MCP tools/list in flight at once, in
	// all (mcplist.DefaultConcurrency when 0; a tenant takes at most half).
	MCPListConcurrency int
	// MCPListTimeout bounds one tools/list (mcplist.DefaultTimeout when 0).
	MCPListTimeout time.Duration
	// Namespaces are the namespaces this manager serves (--watch-namespaces;
	// the zero value: every one). The manager's cache must be confined to
	// them too (served.Namespaces.CacheNamespaces): the reads past it that
	// list — the start-up sweep — ask each served namespace, never the
	// cluster.
	Namespaces served.Namespaces
	// DefaultTTLAfterFinished is the TTL of an ended run whose spec and
	// Agent set none (--default-ttl-seconds-after-finished); 0: such runs
	// are kept.
	DefaultTTLAfterFinished time.Duration
	// RetentionWorkers bounds the runs archived and deleted at once
	// (retention.DefaultWorkers when 0): each holds its run's chain in
	// memory while its archive is sent.
	RetentionWorkers int
	// ArchiveRetry is the backoff between attempts of one run's archive
	// (1s doubling to 5m when unset); attempts never end.
	ArchiveRetry loop.ArchiveRetry
	// ArchiveTimeout bounds one archive attempt (retention.DefaultArchiveTimeout when 0).
	ArchiveTimeout time.Duration
	// ArchiveHTTPClient sends archives (default: its own egress transport
	// under Egress, like notifications).
	ArchiveHTTPClient *http.Client
	// AgentRecheckInterval is how often a Ready Agent's status is checked
	// again (--agent-recheck-interval; DefaultAgentRecheckInterval when 0).
	AgentRecheckInterval time.Duration
	// Shard is what this manager serves (--shard; the zero value: every
	// run). Its cache must be confined to it too (shard.Serving.Cache).
	Shard shard.Serving
	// Placer places runs on shards (--shards; nil: none are placed). With
	// Shard it decides which shared objects this manager writes
	// (Ownership) and where a run it holds belongs (the rebalancer).
	Placer *shard.Placer
}

// Controllers are the wired reconcilers of one manager.
type Controllers struct {
	Runs      *AgentRunReconciler
	Decisions *ApprovalDecisionReconciler
	Agents    *AgentReconciler
	Store     *store.Store
	Executor  *executor.Executor
	// Triggers handles every trigger source's events: the listener serves
	// it, the Kubernetes Events watches call its Deliver.
	Triggers *triggers.Handler
	// Callbacks serves the callback URLs of NewCallback on the trigger
	// listener; nil when Options.CallbackBaseURL or the Signer is unset.
	Callbacks *callbacks.Handler
	// TriggerRuns is the triggers' view of the cluster.
	TriggerRuns *TriggerRuns
	// TriggerStatus keeps the triggers' Ready condition; its Events field
	// is set by whoever runs the Kubernetes Events watches.
	TriggerStatus *TriggerReconciler
	// Owner says which shared objects this manager writes.
	Owner Ownership
}

// Setup builds the store, the executor, the tools and the reconcilers
// (runs, decisions, Agents), and registers them with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) (*Controllers, error) {
	if o.Holder == "" {
		o.Holder = NewHolder()
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.MaxConcurrentDecisions <= 0 {
		o.MaxConcurrentDecisions = DefaultMaxConcurrentDecisions
	}
	limits := executor.Options{MaxInFlight: o.MaxInFlight, PerEndpoint: o.PerEndpoint, DrainTimeout: o.DrainTimeout}.WithDefaults()
	if o.HTTPClient == nil {
		o.HTTPClient = newOutboundClient(o, limits)
	}
	segments := store.NewSegments(mgr.GetClient(), mgr.GetAPIReader(), o.SegmentCacheBytes)
	writes := store.NewStore(mgr.GetClient(), mgr.GetAPIReader()).
		WithSegments(ctx, segments, o.Hooks.store()).WithTracer(o.Tracer, o.Holder).WithObserver(storeMetrics)
	steps := store.NewCommitSteps(mgr.GetClient(), store.SealOptions{HotBytes: o.HotStatusBytes, ValueBytes: o.SealValueBytes},
		o.Tracer, o.Holder)
	exec := executor.New(limits)
	// Events go through a bounded queue with a few writers (eventqueue's
	// doc says why not client-go's broadcaster). controller-runtime stops
	// it, like the releaser, before the controllers: what it holds then is
	// drained, and the Events of commits made while the manager stops are
	// created directly (publish, publishReleased).
	evq := eventqueue.New(mgr.GetClient(), mgr.GetScheme(), ctrl.Log.WithName("events"), eventqueue.Options{Instance: o.Holder})
	if err := mgr.Add(evq); err != nil {
		return nil, fmt.Errorf("adding the Event queue: %w", err)
	}
	runs := &AgentRunReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Store:     writes,
		Steps:     steps,
		Segments:  segments,
		Recorder:  evq.Recorder("exagent-controller"),
		Executor:  exec,
		Tools: &tools.Registry{
			HTTPClient: o.HTTPClient,
			Builtins:   tools.NewBuiltins(mgr.GetConfig(), mgr.GetRESTMapper()),
			MCP:        &tools.MCPCatalog{Client: o.HTTPClient, Clock: o.Clock, Options: mcplist.Options{Concurrency: o.MCPListConcurrency, Timeout: o.MCPListTimeout}},
		},
		ModelOptions:               model.Options{HTTPClient: o.HTTPClient, Timeout: o.ModelTimeout, Limiter: &model.Limiter{}},
		MaxRateLimitWait:           o.ModelMaxRateLimitWait,
		Holder:                     o.Holder,
		Hooks:                      o.Hooks,
		MaxConcurrentReconciles:    o.MaxConcurrentReconciles,
		Name:                       "agentrun" + o.NameSuffix,
		ReleaseOnStop:              o.ReleaseOnStop,
		DrainTimeout:               o.DrainTimeout,
		SkewGrace:                  skewGrace(o.LeaseSkewGrace),
		Clock:                      o.Clock,
		Tracer:                     o.Tracer,
		MaxTranscriptBytes:         o.MaxTranscriptBytes,
		Namespaces:                 o.Namespaces,
		MaxWaitingRunsPerNamespace: o.MaxWaitingRunsPerNamespace,
		Callbacks:                  callbackIssuer(o),
		Shard:                      o.Shard,
	}
	runs.Tools.Secret = runs.secret
	if err := mgr.Add(runs.Tools.MCP); err != nil { // lists MCP servers beside the workers
		return nil, fmt.Errorf("adding the MCP listing refresher: %w", err)
	}
	if err := runs.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the AgentRun controller: %w", err)
	}
	decisions := &ApprovalDecisionReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Store:                   writes,
		Steps:                   steps,
		Verifier:                o.Verifier,
		Signer:                  o.Signer,
		Manager:                 o.ManagerIdentity,
		Recorder:                evq.Recorder("exagent-controller"),
		MaxConcurrentReconciles: o.MaxConcurrentDecisions,
		Name:                    "approvaldecision" + o.NameSuffix,
		MaxTranscriptBytes:      o.MaxTranscriptBytes,
		Tools:                   runs.Tools,
		Runs:                    runs,
		Callbacks:               runs.Callbacks,
	}
	if err := decisions.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ApprovalDecision controller: %w", err)
	}
	owner := Ownership{Serving: o.Shard, Placer: o.Placer}
	agents := &AgentReconciler{
		Owner: owner, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), MCP: runs.Tools.MCP, Clock: o.Clock,
		Recheck: o.AgentRecheckInterval, Name: "agent" + o.NameSuffix, Hooks: o.Hooks,
	}
	if err := agents.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the Agent controller: %w", err)
	}
	conversations := &ConversationReconciler{Owner: owner, Client: mgr.GetClient(), Clock: o.Clock, Name: "conversation" + o.NameSuffix}
	if err := conversations.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Conversation controller: %w", err)
	}
	schedules := &ScheduleReconciler{Owner: owner, Client: mgr.GetClient(), Recorder: evq.Recorder("exagent-schedule"), Clock: o.Clock, Signer: o.Signer, Name: "agentschedule" + o.NameSuffix}
	if err := schedules.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the AgentSchedule controller: %w", err)
	}
	trig, trigStatus, err := setupTriggers(mgr, o, evq)
	if err != nil {
		return nil, err
	}
	cbs, err := setupCallbacks(ctx, mgr, o, runs)
	if err != nil {
		return nil, err
	}
	budgets := &AgentBudgetReconciler{Owner: owner, Client: mgr.GetClient(), Recorder: evq.Recorder("exagent-budget"), Clock: o.Clock, Name: "agentbudget" + o.NameSuffix}
	if err := budgets.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the AgentBudget controller: %w", err)
	}
	if err := mgr.Add(&Rebalancer{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), Owner: owner,
		Log: ctrl.Log.WithName("rebalancer")}); err != nil {
		return nil, fmt.Errorf("adding the shard rebalancer: %w", err)
	}
	if err := setupNotifier(ctx, mgr, o, writes, steps, evq); err != nil {
		return nil, err
	}
	if err := setupRetention(ctx, mgr, o, writes, steps, segments, evq, runs.holdsIO); err != nil {
		return nil, err
	}
	if o.RunMetrics {
		if err := registerRunsCollector(mgr.GetClient()); err != nil {
			return nil, fmt.Errorf("registering the run metrics: %w", err)
		}
	}
	return &Controllers{Runs: runs, Decisions: decisions, Agents: agents, Store: writes, Executor: exec,
		Triggers: trig, TriggerRuns: trig.Lookup.(*TriggerRuns), TriggerStatus: trigStatus, Callbacks: cbs, Owner: owner}, nil
}

// setupTriggers builds the triggers' handler (served by the listener on
// every replica), the counts each replica adds to the triggers' status,
// and the leader's Ready controller.
func setupTriggers(mgr ctrl.Manager, o Options, evq *eventqueue.Queue) (*triggers.Handler, *TriggerReconciler, error) {
	tr := &TriggerRuns{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Signer: o.Signer, Clock: o.Clock,
		Owner: Ownership{Serving: o.Shard, Placer: o.Placer}}
	var ticker clock.WithTicker = clock.RealClock{}
	if c, ok := o.Clock.(clock.WithTicker); ok {
		ticker = c
	}
	stats := &TriggerStats{Client: mgr.GetClient(), Recorder: evq.Recorder("exagent-trigger"), Clock: ticker,
		Log: ctrl.Log.WithName("triggers")}
	if err := mgr.Add(stats); err != nil {
		return nil, nil, fmt.Errorf("adding the trigger counts: %w", err)
	}
	h := &triggers.Handler{Lookup: tr, Creator: tr, Recorder: stats, Clock: o.Clock, Log: ctrl.Log.WithName("triggers")}
	status := &TriggerReconciler{Owner: Ownership{Serving: o.Shard, Placer: o.Placer}, Client: mgr.GetClient(), Runs: tr, Recorder: evq.Recorder("exagent-trigger"), Clock: o.Clock,
		Name: "agenttrigger" + o.NameSuffix}
	if err := status.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up the AgentTrigger controller: %w", err)
	}
	return h, status, nil
}

// setupNotifier registers the notification Deliverer (internal/notify) as a
// leader-only runnable and makes every commit journal what it makes true
// (controllers/notify.go).
func setupNotifier(ctx context.Context, mgr ctrl.Manager, o Options, writes *store.Store, steps *store.CommitSteps, evq *eventqueue.Queue) error {
	hc := o.NotifyHTTPClient
	if hc == nil {
		hc = egress.NewClient(egress.TransportOptions{Policy: o.Egress, AllowLists: o.EgressAllowLists})
	}
	d := notify.NewDeliverer(notify.Config{
		Cache: mgr.GetClient(), Reader: mgr.GetAPIReader(), Informers: mgr.GetCache(), Writer: notifyJournal{store: writes, steps: steps},
		Recorder: evq.Recorder("exagent-notifier"), Clock: clock.RealClock{}, HTTP: hc, Retry: o.NotifyRetry,
		Workers: o.NotifyWorkers, QueueName: "notify" + o.NameSuffix, BeforeNotify: o.Hooks.BeforeNotify, Life: ctx,
		UIURL: o.UIURLTemplate,
	})
	steps.OnDropped(reportDropped(d))
	if err := mgr.Add(d); err != nil {
		return fmt.Errorf("adding the notifier: %w", err)
	}
	return nil
}

// setupRetention registers the reaper (retention) and the indexes
// that list a run's decisions and an Agent's conversations.
func setupRetention(ctx context.Context, mgr ctrl.Manager, o Options, writes *store.Store, steps *store.CommitSteps, segments *store.Segments, evq *eventqueue.Queue,
	running func(types.NamespacedName) bool) error {
	if err := index.Decisions(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := index.Conversations(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	hc := o.ArchiveHTTPClient
	if hc == nil {
		hc = egress.NewClient(egress.TransportOptions{Policy: o.Egress, AllowLists: o.EgressAllowLists})
	}
	r := retention.New(retention.Config{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Store: writes, Steps: steps, Segments: segments,
		Recorder: evq.Recorder("exagent-retention"), Informers: mgr.GetCache(), Clock: o.Clock, HTTP: hc,
		Retry: o.ArchiveRetry, DefaultTTL: o.DefaultTTLAfterFinished, Timeout: o.ArchiveTimeout,
		Workers: o.RetentionWorkers, QueueName: "retention" + o.NameSuffix, Running: running,
		BeforeArchiveJournal: o.Hooks.BeforeArchiveJournal, Life: ctx,
	})
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding retention: %w", err)
	}
	return nil
}

// DefaultMaxConcurrentReconciles is the run controller's workers. A
// worker spends its turn waiting on one status write, so the workers are
// how many writes the manager keeps in flight: the apiserver reaches its
// write ceiling only with many writers at once (4 kept it near a third).
// Memory: a goroutine each (docs/sizing.md).
const DefaultMaxConcurrentReconciles = 16

// DefaultMaxConcurrentDecisions is the decision controller's workers. A
// decision's turn is a SubjectAccessReview, a read and a write, all
// waiting on the apiserver: a burst of approvals (a team approving a
// batch at once) is reviewed all at once instead of queueing behind a few
// workers, so each resume waits only on the apiserver's pace.
const DefaultMaxConcurrentDecisions = 64

// newOutboundClient is the client of model, tool and MCP calls: every
// connection dialled under the egress policy, no redirect followed. Go's
// default transport keeps only 2 idle connections per host, so calls
// beyond that to one endpoint would each open (and, against a real
// provider, TLS-handshake) a new connection. It keeps as many idle per
// host as the executor lets run against one endpoint, and as many in all
// as it lets run at once.
func newOutboundClient(o Options, limits executor.Options) *http.Client {
	limits = limits.WithDefaults()
	return egress.NewClient(egress.TransportOptions{
		Policy: o.Egress, AllowLists: o.EgressAllowLists,
		MaxIdleConns: limits.MaxInFlight, MaxIdleConnsPerHost: limits.PerEndpoint,
	})
}

// DefaultLeaseSkewGrace is the clock-skew grace of lease recovery: NTP
// keeps hosts well within it, and it only delays the recovery of a dead
// owner's run.
const DefaultLeaseSkewGrace = 2 * time.Second

func skewGrace(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultLeaseSkewGrace
	case d < 0:
		return 0
	}
	return d
}

// NewHolder returns a claim holder identity unique to this process start:
// the host name and a random suffix, so a restarted process never mistakes
// its predecessor's claim for its own.
func NewHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "exagent"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}
