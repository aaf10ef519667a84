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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/model"
)

// DefaultMaxRateLimitWait bounds how long one model request waits out
// rate limits when neither the run's deadline nor its active time bounds
// it sooner (Options.MaxRateLimitWait).
const DefaultMaxRateLimitWait = 15 * time.Minute

// modelWaits are the model requests of this process that wait for a rate
// limit now: memory only, for the run's Ready condition ("waiting for the
// model provider (rate limited until …)"). It never grants or changes
// anything the journal holds: an entry is dropped when its request's
// result is filed, and it is shown only for the attempt that set it.
type modelWaits struct {
	mu sync.Mutex
	m  map[types.NamespacedName]modelWait
}

type modelWait struct {
	attempt int64
	until   time.Time
	why     string
}

func (w *modelWaits) set(key types.NamespacedName, v modelWait) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]modelWait{}
	}
	w.m[key] = v
}

func (w *modelWaits) get(key types.NamespacedName) (modelWait, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.m[key]
	return v, ok
}

func (w *modelWaits) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// modelWaitCondition is the Ready=False override of a run whose model
// request of this attempt waits for a rate limit.
func (r *AgentRunReconciler) modelWaitCondition(sc *scope) {
	w, ok := r.mem.waits.get(sc.key)
	if !ok || sc.fence == nil || w.attempt != sc.fence.Attempt || sc.status.Phase != exagentv1.PhaseRunning ||
		sc.status.Cursor.ModelRequest == nil {
		return
	}
	until := "a request in flight ends"
	if !w.until.IsZero() {
		until = w.until.UTC().Format(time.RFC3339)
	}
	sc.overrides = append(sc.overrides, notReady(exagentv1.ReasonModelRateLimited,
		truncate(fmt.Sprintf("waiting for the model provider (rate limited until %s): %s", until, w.why), 1024), sc))
}

// rateLimitWaiter is what a model job tells when it starts to wait: the
// wait is remembered and the run woken, so its condition says so.
func (r *AgentRunReconciler) rateLimitWaiter(ctx context.Context, key types.NamespacedName, attempt int64) func(until time.Time, why string) {
	return func(until time.Time, why string) {
		r.mem.waits.set(key, modelWait{attempt: attempt, until: until, why: why})
		ev := event.GenericEvent{Object: &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}}
		select {
		case r.events <- ev:
		case <-ctx.Done():
		}
	}
}

// waitBudget is how long the run's model request may wait out rate
// limits: until the earliest of its deadline, the end of the active time
// its claim reserved, and now + the manager's MaxRateLimitWait.
func (r *AgentRunReconciler) waitBudget(sc *scope, waiting func(time.Time, string)) model.WaitBudget {
	maxWait := r.MaxRateLimitWait
	if maxWait <= 0 {
		maxWait = DefaultMaxRateLimitWait
	}
	until := sc.now.Add(maxWait)
	if d := sc.run.Spec.Deadline; d != nil && d.Time.Before(until) {
		until = d.Time
	}
	if _, never := sc.env.ActiveTimeLimit(); !never {
		if c := sc.status.Claim; c != nil && c.ClaimedAt != nil {
			if end := c.ClaimedAt.Add(sc.status.Ledger.ActiveTimeReserved.Duration); end.Before(until) {
				until = end
			}
		}
	}
	return model.WaitBudget{Until: until, Waiting: waiting, Now: r.Clock.Now}
}

// lifeOrBackground is the manager's context, or Background before setup
// (tests that build a reconciler by hand).
func (r *AgentRunReconciler) lifeOrBackground() context.Context {
	if r.life != nil {
		return r.life
	}
	return context.Background()
}
