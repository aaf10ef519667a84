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

package pool

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunDrainsThenWaits: Run starts at least one worker, keeps them
// working until ctx ends, then shuts the queue down and returns only once
// every worker has finished the item in hand.
func TestRunDrainsThenWaits(t *testing.T) {
	for _, n := range []int{0, 3} {
		ctx, cancel := context.WithCancel(context.Background())
		queue, release := make(chan struct{}), make(chan struct{})
		started, stopping := make(chan struct{}, n+1), make(chan struct{}, n+1)
		var finished atomic.Int32
		work := func(context.Context) bool {
			started <- struct{}{}
			<-queue // an item in hand until the queue is shut down
			stopping <- struct{}{}
			<-release // finishing it: Run must wait for this
			finished.Add(1)
			return false
		}
		done := make(chan struct{})
		go func() { Run(ctx, n, func() { close(queue) }, work); close(done) }()
		want := max(n, 1)
		receive(t, started, want, "the workers did not start")
		select {
		case <-done:
			t.Fatalf("n=%d: Run returned before ctx ended", n)
		default:
		}
		cancel()
		receive(t, stopping, want, "ctx ended but the queue was not shut down")
		select {
		case <-done:
			t.Fatalf("n=%d: Run returned while its workers were still busy", n)
		default:
		}
		close(release)
		receive(t, done, 1, "Run did not return once its workers finished")
		if got := finished.Load(); int(got) != want {
			t.Errorf("n=%d: Run returned with %d of %d workers finished", n, got, want)
		}
	}
}

// receive waits for count values from c (a closed c counts as one).
func receive(t *testing.T, c <-chan struct{}, count int, fail string) {
	t.Helper()
	for range count {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatal(fail)
		}
	}
}
