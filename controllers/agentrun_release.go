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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// workers counts the reconciles running, so the releaser can wait for the
// ones a stop caught and keep new ones from touching the inbox after it.
type workers struct {
	mu       sync.Mutex
	stopping bool
	active   int
	changed  chan struct{}
}

// enter admits a reconcile; false once the releaser took over.
func (w *workers) enter() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return false
	}
	w.active++
	return true
}

func (w *workers) leave() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active--
	if w.changed != nil {
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

// stop admits no more reconciles and waits (bounded by ctx) for the
// running ones to return.
func (w *workers) stop(ctx context.Context) {
	w.mu.Lock()
	w.stopping = true
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
	for {
		w.mu.Lock()
		n, ch := w.active, w.changed
		w.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// owned tracks the runs this process holds a claim on, from its own commits.
type owned struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]struct{}
}

func (o *owned) track(run *exagentv1.AgentRun, holder string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	if c := run.Status.Claim; c != nil && c.Holder == holder && run.Status.Phase == exagentv1.PhaseRunning {
		o.runs[key] = struct{}{}
		return
	}
	delete(o.runs, key)
}

func (o *owned) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.runs, key)
}

func (o *owned) keys() []types.NamespacedName {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(o.runs))
	for k := range o.runs {
		out = append(out, k)
	}
	return out
}

// releaser hands back, when the manager stops, the runs this process owns,
// so another process claims them at once instead of waiting for the lease
// to expire. With a drain (DrainTimeout), the calls already running when
// the manager stopped go on for at most that long; the releaser waits for
// each run's results (never past its lease), then records them and hands
// the run back in one fenced commit. An outstanding model request that did
// not answer is simply re-sent by the next owner. A run with a tool call
// still in flight is left to its lease: its outcome is unknown, so
// recovery makes it Uncertain. When anything fails nothing more is done: a
// crash (no hand-back) is always safe; this only saves time and humans.
type releaser struct {
	r       *AgentRunReconciler
	timeout time.Duration
	drain   time.Duration
}

// NeedLeaderElection is false: a follower owns nothing and returns at once.
func (x releaser) NeedLeaderElection() bool { return false }

// Start waits for the manager to stop, then releases.
func (x releaser) Start(ctx context.Context) error {
	<-ctx.Done()
	// The manager's context is gone: the hand-back gets its own, bounded;
	// the wait for results ends with the drain.
	base := context.WithoutCancel(ctx)
	wait, cancelWait := context.WithTimeout(base, x.drain)
	defer cancelWait()
	rctx, cancel := context.WithTimeout(base, x.drain+x.timeout)
	defer cancel()
	// A reconcile running at the stop may hold results it took from the
	// inbox: wait for it to commit them or put them back, and admit no
	// other (the manager stops this runnable before the controllers).
	x.r.workers.stop(rctx)
	x.r.releaseOwned(rctx, wait)
	return nil
}

// releaseMargin is how long before the lease expires the wait for results
// gives up, leaving time for the commit.
const releaseMargin = time.Second

// releaseAttempts bounds the retries of a hand-back that met a newer version.
const releaseAttempts = 3

func (r *AgentRunReconciler) releaseOwned(ctx, wait context.Context) {
	log := logf.FromContext(ctx).WithName("release").WithValues("holder", r.Holder)
	var wg sync.WaitGroup
	for _, key := range r.mem.owned.keys() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.releaseOne(ctx, wait, key); err != nil {
				log.Info("run not released; its lease will expire", "run", key, "reason", err.Error())
				return
			}
			log.Info("released run", "run", key)
		}()
	}
	wg.Wait()
}

// releaseOne waits (bounded by wait and the lease) for the run's calls in
// flight, then records their results and releases the run in one commit.
func (r *AgentRunReconciler) releaseOne(ctx, wait context.Context, key types.NamespacedName) error {
	o, err := r.ownedRun(ctx, key)
	if err != nil || o == nil {
		return err
	}
	lease := o.run.Status.Claim.LeaseExpiresAt.Time
	lctx, cancel := context.WithTimeout(wait, lease.Sub(r.Clock.Now())-releaseMargin)
	r.mem.inbox.settled(lctx, key)
	cancel()
	for i := 0; ; i++ {
		if i > 0 {
			if o, err = r.ownedRun(ctx, key); err != nil || o == nil {
				return err
			}
		}
		run, env, fence := o.run, o.env, o.fence
		results, _ := r.mem.inbox.take(key)
		sc := &scope{key: key, now: r.Clock.Now(), run: run, agent: o.agent, env: env, fence: &fence, status: *run.Status.DeepCopy()}
		if _, err := r.applyResults(ctx, sc, results); err != nil {
			return err
		}
		next, released := sc.status, true
		if next.Phase == exagentv1.PhaseRunning {
			if next, err = loop.Release(sc.status, env, fence, sc.now); err != nil {
				// A call is still in flight: the run cannot be handed back,
				// but the outcomes this process knows are committed all the
				// same (fenced); the lease then runs out and recovery makes
				// only the unanswered calls Uncertain.
				if next, err = r.keepOutcomes(sc, env, fence); err != nil {
					return err
				}
				released = false
			}
		}
		if equalStatus(next, run.Status) {
			return errCallsInFlight
		}
		written, err := r.Store.Commit(ctx, store.Write{Run: run, Status: next, Fence: &fence, Now: sc.now, Steps: r.Steps.All(store.HeldSinks(o.agent))})
		if errors.Is(err, store.ErrConflict) && i+1 < releaseAttempts {
			r.mem.inbox.putBack(key, results)
			continue
		}
		if err != nil {
			return err
		}
		r.committed(written)
		r.publishReleased(run, written) // end Events and notifications of runs that ended in the drain
		if !released {
			return errCallsInFlight
		}
		return nil
	}
}

// errCallsInFlight is why a run was not handed back: a call is still in
// flight (its outcome, if any arrives, is lost with this process).
var errCallsInFlight = errors.New("tool calls are still in flight: the outcomes known were committed; the lease will expire")

// keepOutcomes is the status a releaser commits when it cannot release:
// the outcomes recorded, and a lease valid for the write (extended only
// when the stored one lapsed, so recovery is not put off needlessly).
func (r *AgentRunReconciler) keepOutcomes(sc *scope, env *loop.Env, fence loop.Fence) (loop.Status, error) {
	next := sc.status
	if c := next.Claim; c != nil && sc.now.Before(c.LeaseExpiresAt.Time) {
		return next, nil
	}
	return loop.Extend(next, env, fence, sc.now)
}

// ownedRead is a run this process owns, read past the cache with its
// Agent, ready for a release.
type ownedRead struct {
	run   *exagentv1.AgentRun
	agent *exagentv1.Agent
	env   *loop.Env
	fence loop.Fence
}

// ownedRun reads the run past the cache; nil when this process no longer
// holds its claim.
func (r *AgentRunReconciler) ownedRun(ctx context.Context, key types.NamespacedName) (*ownedRead, error) {
	run := &exagentv1.AgentRun{}
	if err := r.APIReader.Get(ctx, key, run); err != nil {
		return nil, err
	}
	c := run.Status.Claim
	if run.Status.Phase != exagentv1.PhaseRunning || c == nil || c.Holder != r.Holder {
		return nil, nil // not ours any more
	}
	agent := &exagentv1.Agent{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		return nil, err
	}
	env, err := r.envConfig().env(run, agent, envExtras{mcp: r.releaseListings(ctx, run.Namespace, &agent.Spec)})
	if err != nil {
		return nil, err
	}
	return &ownedRead{run: run, agent: agent, env: env, fence: loop.Fence{Holder: c.Holder, Attempt: c.Attempt}}, nil
}
