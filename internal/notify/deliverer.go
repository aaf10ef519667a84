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

package notify

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/pool"
)

// Config is what a Deliverer is built from (the controllers' setup).
type Config struct {
	// Cache reads Agents (the manager's cache).
	Cache client.Reader
	// Reader reads past the cache: the run as stored, Secrets.
	Reader client.Reader
	// Informers gives the AgentRun informer whose adds and updates queue
	// runs.
	Informers cache.Informers
	// Writer journals the attempts' results in the run's status.
	Writer StatusWriter
	// Recorder records the NotificationFailed Events (nil: none).
	Recorder events.EventRecorder
	// Clock is the real clock when nil.
	Clock clock.PassiveClock
	// HTTP sends the notifications (egress-policed by the caller).
	HTTP *http.Client
	// Retry bounds the attempts (its defaults fill what is unset).
	Retry Retry
	// Workers bounds the deliveries running at once (default 4).
	Workers int
	// QueueName names the queue in the workqueue metrics.
	QueueName string
	// BeforeNotify, when set, runs before each delivery attempt (a test
	// hook: it may stop the manager right there).
	BeforeNotify func(ctx context.Context, run types.NamespacedName, rec exagentv1.NotificationRecord)
	// Life is the context the controllers were set up with (the
	// manager's): it ends at the stop, before the runnables' own contexts.
	Life context.Context
	// UIURL, when set, links every notification to the run's page
	// (data.links.ui; a button in Slack).
	UIURL URLTemplate
}

// defaultWorkers is Config.Workers when unset.
const defaultWorkers = 4

// Deliverer delivers the notifications journaled in runs' status to the
// Agents' notify sinks. It is its own bounded pool of workers with its own
// queue and HTTP client: a slow or failing sink never holds a reconcile
// worker or an executor slot, and never blocks a run (the run's commits
// never wait for it). What is due is read from the stored status; each
// attempt's result is journaled with compare-and-swap, so a crash re-sends
// (the same id) and never forgets. It is a manager runnable.
type Deliverer struct {
	c     Config
	queue workqueue.TypedDelayingInterface[types.NamespacedName]
}

// NewDeliverer returns a Deliverer of c, its defaults filled.
func NewDeliverer(c Config) *Deliverer {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Workers <= 0 {
		c.Workers = defaultWorkers
	}
	c.Retry = c.Retry.WithDefaults()
	return &Deliverer{c: c, queue: workqueue.NewTypedDelayingQueueWithConfig(
		workqueue.TypedDelayingQueueConfig[types.NamespacedName]{Name: c.QueueName})}
}

// NeedLeaderElection: one replica delivers (another one taking over re-sends
// what was not journaled, with the same id).
func (d *Deliverer) NeedLeaderElection() bool { return true }

// Start watches runs and delivers until ctx ends.
func (d *Deliverer) Start(ctx context.Context) error {
	inf, err := d.c.Informers.GetInformer(ctx, &exagentv1.AgentRun{})
	if err != nil {
		return fmt.Errorf("notifier: informer of AgentRuns: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { d.enqueue(o) },
		UpdateFunc: func(_, o any) { d.enqueue(o) },
	})
	if err != nil {
		return fmt.Errorf("notifier: watching AgentRuns: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	pool.Run(ctx, d.c.Workers, d.queue.ShutDown, d.work)
	return nil
}

// enqueue queues a run that has something to deliver now or later.
func (d *Deliverer) enqueue(o any) {
	run, ok := o.(*exagentv1.AgentRun)
	if !ok {
		return
	}
	if len(Pending(&run.Status)) > 0 {
		d.queue.Add(client.ObjectKeyFromObject(run))
		return
	}
	if due, next := Due(&run.Status, d.c.Clock.Now()); len(due) == 0 && next.IsZero() {
		return
	}
	// An approval is still to announce or will expire: only a run whose
	// Agent has sinks is looked at.
	agent := &exagentv1.Agent{}
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}
	if err := d.c.Cache.Get(context.Background(), key, agent); err == nil && len(agent.Spec.Notify) > 0 {
		d.queue.Add(client.ObjectKeyFromObject(run))
	}
}

func (d *Deliverer) work(ctx context.Context) bool {
	key, quit := d.queue.Get()
	if quit {
		return false
	}
	defer d.queue.Done(key)
	after, err := d.process(ctx, key)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		logf.FromContext(ctx).Info("notifications not journaled; retrying", "run", key, "error", err.Error())
		d.queue.AddAfter(key, time.Second)
	case after > 0:
		d.queue.AddAfter(key, after)
	}
	return true
}
