package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/loop"
)

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

// releaser hands back, when the manager stops, the runs this process owns
// with no tool call in flight (an outstanding model request is simply
// re-sent by the next owner), so another process claims them at once
// instead of waiting for the lease to expire. A run with a tool call in
// flight is left to its lease: its outcome is unknown, so recovery makes it
// Uncertain. A crash (no hand-back) is always safe; this only saves time.
type releaser struct {
	r       *AgentRunReconciler
	timeout time.Duration
}

// NeedLeaderElection is false: a follower owns nothing and returns at once.
func (x releaser) NeedLeaderElection() bool { return false }

// Start waits for the manager to stop, then releases.
func (x releaser) Start(ctx context.Context) error {
	<-ctx.Done()
	// The manager's context is gone: the hand-back gets its own, bounded.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.timeout)
	defer cancel()
	x.r.releaseOwned(rctx)
	return nil
}

func (r *AgentRunReconciler) releaseOwned(ctx context.Context) {
	log := logf.FromContext(ctx).WithName("release").WithValues("holder", r.Holder)
	for _, key := range r.owned.keys() {
		if err := r.releaseOne(ctx, key); err != nil {
			log.Info("run not released; its lease will expire", "run", key, "reason", err.Error())
			continue
		}
		log.Info("released run", "run", key)
	}
}

func (r *AgentRunReconciler) releaseOne(ctx context.Context, key types.NamespacedName) error {
	run := &exagentv1.AgentRun{}
	if err := r.APIReader.Get(ctx, key, run); err != nil {
		return err
	}
	c := run.Status.Claim
	if run.Status.Phase != exagentv1.PhaseRunning || c == nil || c.Holder != r.Holder {
		return nil // not ours any more
	}
	agent := &exagentv1.Agent{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		return err
	}
	env, err := loop.NewEnv(loop.EnvInput{RunUID: string(run.UID), RunName: run.Name,
		Agent: &agent.Spec, AgentGeneration: agent.Generation, Run: &run.Spec})
	if err != nil {
		return err
	}
	fence := loop.Fence{Holder: c.Holder, Attempt: c.Attempt}
	now := r.Clock.Now()
	next, err := loop.Release(run.Status, env, fence, now)
	if err != nil {
		return err
	}
	_, err = r.Store.Commit(ctx, run, next, &fence, now)
	return err
}
