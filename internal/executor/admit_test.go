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
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestAdmitHoldsNoSlot: with one slot in all, a task blocked in Admit
// keeps no other job from running; once admitted it runs, and release is
// called after it. A refused admission is NotStarted with its error, and
// release still runs.
func TestAdmitHoldsNoSlot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := New(Options{MaxInFlight: 1, PerEndpoint: 1})
	go func() { _ = e.Start(ctx) }()

	gate := make(chan struct{})
	var ranAdmitted atomic.Bool
	released := make(chan struct{})
	admittedDone := make(chan struct{})
	e.Go(Task{Endpoint: "model", Admit: func(ctx context.Context) (func(), error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return func() { close(released) }, nil
	}, Run: func(context.Context) { ranAdmitted.Store(true); close(admittedDone) }})

	other := make(chan struct{})
	e.Go(Task{Endpoint: "model", Run: func(context.Context) { close(other) }})
	select {
	case <-other:
	case <-time.After(30 * time.Second):
		t.Fatal("a task waiting in Admit held the only slot")
	}
	if ranAdmitted.Load() {
		t.Fatal("the task ran before it was admitted")
	}
	close(gate)
	select {
	case <-admittedDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the admitted task never ran")
	}
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Error("release was not called after the job")
	}

	refused := errors.New("no")
	releasedRefused := make(chan struct{})
	cause := make(chan error, 1)
	e.Go(Task{Endpoint: "model",
		Admit:      func(context.Context) (func(), error) { return func() { close(releasedRefused) }, refused },
		Run:        func(context.Context) { t.Error("a refused task ran") },
		NotStarted: func(err error) { cause <- err }})
	select {
	case err := <-cause:
		if !errors.Is(err, refused) {
			t.Errorf("NotStarted(%v), want the admission's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a refused task was never reported")
	}
	select {
	case <-releasedRefused:
	case <-time.After(30 * time.Second):
		t.Error("release was not called for the refused task")
	}
}
