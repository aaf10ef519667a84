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

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// testThreeManagersKilledAtRandom (R2): three manager processes and no
// leader election run the same runs — each a parallel batch of allowed
// calls (http, idempotent http, builtin), then a batch with one call a
// human approves — while a seeded schedule SIGKILLs one of them and starts
// it again at random intervals for a bounded time. Every run ends; no
// effect happens twice; only alice's and carol's decisions apply (bob's
// are refused at admission); the history check holds.
func testThreeManagersKilledAtRandom(t *testing.T) {
	managersKilledAtRandom(t, "r2", nil)
}

// testShardedManagersKilledAtRandom (R2, sharded): R2 with three shard
// managers — each serving its shard of a,b,c, its own runs only — killed
// and restarted at random, while the namespace is resharded twice under
// the load: pinned to shard b (every other shard's leader moves its runs
// there, mid-call or paused), then unpinned (they move back to the shard
// their name hashes to). Every run ends; no effect happens twice.
func testShardedManagersKilledAtRandom(t *testing.T) {
	managersKilledAtRandom(t, "r2s", []string{"a", "b", "c"})
}

// managersKilledAtRandom is R2: with shards, manager i serves shards[i]
// and the namespace is resharded during the kills.
func managersKilledAtRandom(t *testing.T, name string, shards []string) {
	cl := sharedCluster(t)
	sz := sizes()
	s := newScenario(t, cl, name, func(run types.NamespacedName, step int32) Turn {
		switch step {
		case 0:
			return Turn{Calls: []ToolCall{
				{ID: "charge", Name: toolCharge, Args: map[string]any{"amount": 1}},
				scaleCall(run.Name, "scale"),
			}}
		case 1:
			return Turn{Calls: []ToolCall{
				{ID: "refund", Name: toolRefund, Args: map[string]any{"amount": 2}},
				{ID: "wire", Name: toolWire, Args: map[string]any{"amount": 3}},
			}}
		}
		return Turn{Text: "done"}
	})
	s.createAgent("mixed")
	// Busy endpoints and small executor pools: calls wait in the managers'
	// queues, where a claim can go stale before the call starts.
	s.tools.SetLatency(200 * time.Millisecond)
	s.model.SetLatency(100 * time.Millisecond)
	managerArgs := func(i int) []string {
		args := []string{"--max-inflight-per-endpoint", "2"}
		if shards != nil {
			args = append(args, "--shard", shards[i], "--shards", strings.Join(shards, ","))
		}
		return args
	}
	var set shard.Set
	if shards != nil {
		var err error
		if set, err = shard.Parse(strings.Join(shards, ",")); err != nil {
			t.Fatal(err)
		}
		// As admission with --shards stamps them (the suite's webhook places nothing).
		s.labels = func(run string) map[string]string {
			return map[string]string{exagentv1.LabelShard: set.Assign(s.ns, "AgentRun/"+run)}
		}
	}

	const n = 3
	var (
		mu       sync.Mutex
		managers [n]*procs.Process
	)
	for i := range managers {
		p, err := cl.startManager(managerOpts{name: fmt.Sprintf("%s-%d", name, i), args: managerArgs(i)})
		if err != nil {
			t.Fatal(err)
		}
		managers[i] = p
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range managers {
			if p != nil {
				p.Kill()
			}
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.decideLoop(ctx)

	// The killer: a seeded schedule of SIGKILLs and restarts.
	rng := rand.New(rand.NewPCG(uint64(seed()), 2))
	killerDone := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(sz.killFor)
		for time.Now().Before(deadline) {
			wait := time.Duration(1000+rng.IntN(3000)) * time.Millisecond
			select {
			case <-ctx.Done():
				killerDone <- nil
				return
			case <-time.After(wait):
			}
			i := rng.IntN(n)
			down := time.Duration(200+rng.IntN(2000)) * time.Millisecond
			mu.Lock()
			managers[i].Kill()
			s.mu.Lock()
			s.kills++
			s.mu.Unlock()
			mu.Unlock()
			select {
			case <-ctx.Done():
				killerDone <- nil
				return
			case <-time.After(down):
			}
			p, err := cl.startManager(managerOpts{name: fmt.Sprintf("%s-%d", name, i), args: managerArgs(i)})
			if err != nil {
				killerDone <- err
				return
			}
			mu.Lock()
			managers[i] = p
			mu.Unlock()
		}
		killerDone <- nil
	}()

	resharded := make(chan error, 1)
	if shards != nil {
		go func() { resharded <- s.reshardTwice(ctx, sz.killFor, set) }()
	} else {
		resharded <- nil
	}

	// Runs are created in parallel batches while the killer works.
	for b := 0; b < sz.managersRuns; b += sz.batch {
		var wg sync.WaitGroup
		errs := make(chan error, sz.batch)
		for i := b; i < min(b+sz.batch, sz.managersRuns); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("run-%03d", i)
				if err := s.createRun(name, "mixed", "scale"); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("seed %d: %v", seed(), err)
		}
	}
	if err := <-killerDone; err != nil {
		t.Fatalf("seed %d: restarting a manager: %v", seed(), err)
	}
	if err := <-resharded; err != nil {
		t.Fatalf("seed %d: resharding: %v", seed(), err)
	}
	s.waitDone(3*time.Minute + sz.killFor)
	cancel()

	exhausted := 0
	for _, name := range s.runNames() {
		r := s.rec.Latest(name)
		switch {
		case r == nil || r.Status.Phase == exagentv1.PhaseSucceeded || !r.Status.Phase.IsTerminal():
		case r.Status.Phase == exagentv1.PhaseFailed && r.Status.Reason == exagentv1.ReasonModelRequestRetriesExhausted:
			// The bound on re-sent model requests doing its job: this run's
			// owners were killed while its model request was out more often
			// than a step may pay for (docs/architecture.md §4, item 7). Terminal and
			// explained; nothing was duplicated.
			exhausted++
		default:
			t.Errorf("seed %d: run %s ended %s (%s: %s), want Succeeded", seed(), name, r.Status.Phase, r.Status.Reason, r.Status.Message)
		}
	}
	if exhausted > 0 {
		t.Logf("chaos r2: %d runs ended %s (their model request was lost more often than the per-step bound allows)",
			exhausted, exagentv1.ReasonModelRequestRetriesExhausted)
	}
	s.verify()
}

// reshardTwice pins the scenario's namespace to shard b a third of the
// way through the kills, waits until every live run is labelled b, then
// unpins it and waits until every live run is back on the shard it hashes
// to; it logs how many runs each move took.
func (s *scenario) reshardTwice(ctx context.Context, killFor time.Duration, set shard.Set) error {
	third := killFor / 3
	for _, step := range []struct {
		pin  string
		want func(run string) string
	}{
		{pin: "b", want: func(string) string { return "b" }},
		{pin: "", want: func(run string) string { return set.Assign(s.ns, "AgentRun/"+run) }},
	} {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(third):
		}
		if err := s.pinNamespace(ctx, step.pin); err != nil {
			return err
		}
		start := time.Now()
		var moved int
		err := procs.Poll(5*time.Minute, func() (bool, error) {
			var list exagentv1.AgentRunList
			if err := s.cl.c.List(ctx, &list, client.InNamespace(s.ns)); err != nil {
				return false, nil
			}
			moved = 0
			for i := range list.Items {
				r := &list.Items[i]
				if r.Labels[exagentv1.LabelShard] == step.want(r.Name) {
					moved++
					continue
				}
				if !r.Status.Phase.IsTerminal() {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the runs to move (pin %q): %w", step.pin, err)
		}
		s.t.Logf("chaos %s: namespace pinned to %q: %d runs on their shard %s later", s.name, step.pin, moved, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// pinNamespace sets (or, with "", removes) the namespace's shard pin.
func (s *scenario) pinNamespace(ctx context.Context, pin string) error {
	var value any
	if pin != "" {
		value = pin
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{exagentv1.LabelShard: value}}})
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}
	if err := s.cl.c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("pinning namespace %s to %q: %w", s.ns, pin, err)
	}
	return nil
}
