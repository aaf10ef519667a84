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

package executor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestLimits runs more jobs than slots and checks that neither the total
// nor the per-endpoint limit is ever exceeded, and that every job runs.
func TestLimits(t *testing.T) {
	tests := map[string]struct {
		opts      Options
		endpoints []string
		jobs      int
		wantTotal int32
		wantPerEP int32
	}{
		"total bounds":        {opts: Options{MaxInFlight: 3, PerEndpoint: 10}, endpoints: []string{"a", "b", "c", "d"}, jobs: 40, wantTotal: 3, wantPerEP: 3},
		"per endpoint bounds": {opts: Options{MaxInFlight: 10, PerEndpoint: 2}, endpoints: []string{"a"}, jobs: 20, wantTotal: 2, wantPerEP: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e := New(tc.opts)
			go func() { _ = e.Start(ctx) }()

			var mu sync.Mutex
			cur, maxCur := int32(0), int32(0)
			perEP := map[string]int32{}
			maxEP := int32(0)
			release := make(chan struct{})
			var done sync.WaitGroup
			var ran atomic.Int32
			for i := 0; i < tc.jobs; i++ {
				ep := tc.endpoints[i%len(tc.endpoints)]
				done.Add(1)
				e.Submit(ep, func(ctx context.Context) {
					defer done.Done()
					mu.Lock()
					cur++
					perEP[ep]++
					maxCur = max(maxCur, cur)
					maxEP = max(maxEP, perEP[ep])
					mu.Unlock()
					<-release
					mu.Lock()
					cur--
					perEP[ep]--
					mu.Unlock()
					ran.Add(1)
				})
			}
			// Wait until the pool is saturated, then let everything drain.
			var c int32
			if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true,
				func(context.Context) (bool, error) {
					mu.Lock()
					defer mu.Unlock()
					c = cur
					return c == tc.wantTotal, nil
				}); err != nil {
				t.Fatalf("pool never reached %d running jobs (at %d)", tc.wantTotal, c)
			}
			close(release)
			done.Wait()
			if got := ran.Load(); got != int32(tc.jobs) {
				t.Errorf("ran %d jobs, want %d", got, tc.jobs)
			}
			if maxCur != tc.wantTotal {
				t.Errorf("max concurrent = %d, want %d", maxCur, tc.wantTotal)
			}
			if maxEP > tc.wantPerEP {
				t.Errorf("max per endpoint = %d, want <= %d", maxEP, tc.wantPerEP)
			}
		})
	}
}

// TestStopCancelsWaiting checks that jobs still waiting for a slot when the
// executor stops never run.
func TestStopCancelsWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := New(Options{MaxInFlight: 1, PerEndpoint: 1})
	stopped := make(chan struct{})
	go func() { _ = e.Start(ctx); close(stopped) }()
	running, block := make(chan struct{}), make(chan struct{})
	var ran atomic.Int32
	e.Submit("x", func(ctx context.Context) { close(running); <-ctx.Done(); close(block) })
	<-running
	for i := 0; i < 5; i++ {
		e.Submit("x", func(context.Context) { ran.Add(1) })
	}
	cancel()
	<-stopped
	<-block
	if got := ran.Load(); got > 0 {
		t.Errorf("%d waiting jobs ran after stop", got)
	}
}

// TestDrain checks that, with a DrainTimeout, a job running at the stop
// keeps a live context until it returns, while jobs waiting for a slot are
// dropped (their dropped callback runs) and never start.
func TestDrain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := New(Options{MaxInFlight: 1, PerEndpoint: 1, DrainTimeout: time.Minute})
	stopped := make(chan struct{})
	go func() { _ = e.Start(ctx); close(stopped) }()
	running, finish := make(chan struct{}), make(chan struct{})
	var liveAtEnd atomic.Bool
	e.Submit("x", func(ctx context.Context) { close(running); <-finish; liveAtEnd.Store(ctx.Err() == nil) })
	<-running
	var ran, dropped atomic.Int32
	for i := 0; i < 3; i++ {
		e.SubmitOr("x", func(context.Context) { ran.Add(1) }, func() { dropped.Add(1) })
	}
	cancel()
	close(finish)
	<-stopped
	if !liveAtEnd.Load() {
		t.Error("the running job's context was cancelled before the drain ended")
	}
	if ran.Load() != 0 || dropped.Load() != 3 {
		t.Errorf("waiting jobs: %d ran, %d dropped; want 0 and 3", ran.Load(), dropped.Load())
	}
	select {
	case <-e.Draining():
	default:
		t.Error("Draining not closed after Start returned")
	}
}

// TestDrainTimeoutCancels checks that the drain is bounded.
func TestDrainTimeoutCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := New(Options{DrainTimeout: 10 * time.Millisecond})
	stopped := make(chan struct{})
	go func() { _ = e.Start(ctx); close(stopped) }()
	running := make(chan struct{})
	e.Submit("x", func(ctx context.Context) { close(running); <-ctx.Done() })
	<-running
	cancel()
	<-stopped // returns only because the drain cancelled the job
}

// TestIdleEndpointsAreDropped: endpoint names come from Agents, so the
// executor keeps an endpoint's bucket only while a job waits on it or runs
// in it. A thousand endpoints used once leave nothing behind, while a busy
// endpoint keeps its bucket — and its limit — through all of them.
func TestIdleEndpointsAreDropped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := New(Options{MaxInFlight: 64, PerEndpoint: 1})
	go func() { _ = e.Start(ctx) }()

	// One job holds the busy endpoint's only slot; a second waits for it.
	release := make(chan struct{})
	running := make(chan struct{})
	var busyRan atomic.Int32
	e.Submit("busy", func(context.Context) { close(running); <-release; busyRan.Add(1) })
	<-running
	secondStarted := make(chan struct{})
	e.Submit("busy", func(context.Context) { close(secondStarted); busyRan.Add(1) })

	var done sync.WaitGroup
	for i := range 1000 {
		done.Add(1)
		e.Submit(fmt.Sprintf("tenant-%d.example", i), func(context.Context) { done.Done() })
	}
	done.Wait()
	// The jobs returned; their buckets go once their goroutines unwind.
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return e.Endpoints() == 1, nil }); err != nil {
		t.Fatalf("endpoint buckets after 1000 one-off endpoints = %d, want 1 (the busy one)", e.Endpoints())
	}
	// The busy endpoint's limit still holds: its second job has not started.
	select {
	case <-secondStarted:
		t.Fatal("a job started on an endpoint whose only slot is taken: its bucket was dropped while busy")
	default:
	}
	close(release)
	<-secondStarted
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return e.Endpoints() == 0, nil }); err != nil {
		t.Fatalf("endpoint buckets once every job returned = %d, want 0", e.Endpoints())
	}
}
