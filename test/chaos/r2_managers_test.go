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
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
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
	cl := sharedCluster(t)
	sz := sizes()
	s := newScenario(t, cl, "r2", func(run types.NamespacedName, step int32) Turn {
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
	managerArgs := []string{"--max-inflight-per-endpoint", "2"}

	const n = 3
	var (
		mu       sync.Mutex
		managers [n]*procs.Process
	)
	for i := range managers {
		p, err := cl.startManager(managerOpts{name: fmt.Sprintf("r2-%d", i), args: managerArgs})
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
			p, err := cl.startManager(managerOpts{name: fmt.Sprintf("r2-%d", i), args: managerArgs})
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
