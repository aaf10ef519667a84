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
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/exagent-io/exagent/loop"
)

// ioResult is one finished model request or tool call, waiting for the
// run's owner to commit it.
type ioResult struct {
	// uid is the run's: a run deleted and re-created under the same name
	// never receives the old one's results.
	uid   types.UID
	fence loop.Fence
	// Exactly one of model, modelErr, tool, notStarted is meaningful.
	model    *loop.ModelResponse
	modelErr error
	tool     *loop.ToolResult
	// notStarted is a job the executor refused to start on a lease too
	// close to its end; callID is its call ("" for the model request).
	notStarted *notStarted
	// delegated is a delegation call's effect (agentrun_delegate.go).
	delegated *delegated
}

// notStarted names the intent whose IO never began.
type notStarted struct {
	callID string
	cause  error
}

// inbox holds finished IO per run and counts what is still in flight. It
// is memory only: a result a crash loses is what the journal's intent
// without outcome stands for.
type inbox struct {
	mu       sync.Mutex
	results  map[types.NamespacedName][]ioResult
	inFlight map[types.NamespacedName]int
	// changed is closed (and replaced) whenever a job ends.
	changed chan struct{}
}

func newInbox() *inbox {
	return &inbox{results: map[types.NamespacedName][]ioResult{}, inFlight: map[types.NamespacedName]int{},
		changed: make(chan struct{})}
}

// started counts n jobs dispatched for key.
func (b *inbox) started(key types.NamespacedName, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight[key] += n
}

// deliver files a finished job's result.
func (b *inbox) deliver(key types.NamespacedName, r ioResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.results[key] = append(b.results[key], r)
	b.done(key)
}

// abandon counts a job that ended without a result (stopped).
func (b *inbox) abandon(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done(key)
}

func (b *inbox) done(key types.NamespacedName) {
	if b.inFlight[key]--; b.inFlight[key] <= 0 {
		delete(b.inFlight, key)
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// settled waits until no job of key is in flight (true) or ctx ends (false).
func (b *inbox) settled(ctx context.Context, key types.NamespacedName) bool {
	for {
		b.mu.Lock()
		n, ch := b.inFlight[key], b.changed
		b.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// take removes and returns key's results and how many jobs are still running.
func (b *inbox) take(key types.NamespacedName) ([]ioResult, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rs := b.results[key]
	delete(b.results, key)
	return rs, b.inFlight[key]
}

// putBack returns results a failed commit did not record, ahead of newer ones.
func (b *inbox) putBack(key types.NamespacedName, rs []ioResult) {
	if len(rs) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.results[key] = append(append([]ioResult(nil), rs...), b.results[key]...)
}

// tracks reports whether this process still has IO of key in flight or
// results of it waiting to be committed: a run it must not recover.
func (b *inbox) tracks(key types.NamespacedName) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight[key] > 0 || len(b.results[key]) > 0
}

// pending reports how many jobs of key are in flight.
func (b *inbox) pending(key types.NamespacedName) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight[key]
}
