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
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// turns serializes the work on one run between the run controller's
// workers and the decision controller's direct resume (resumeDecided): the
// work queue keeps two workers off one run, but the direct resume does
// not pass through it. A run's turn is a few milliseconds; other runs
// never wait for it.
type turns struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]*turn
}

type turn struct {
	mu   sync.Mutex
	refs int
}

func newTurns() *turns { return &turns{runs: map[types.NamespacedName]*turn{}} }

// take waits for key's turn and returns its release.
func (t *turns) take(key types.NamespacedName) (release func()) {
	t.mu.Lock()
	tu := t.runs[key]
	if tu == nil {
		tu = &turn{}
		t.runs[key] = tu
	}
	tu.refs++
	t.mu.Unlock()
	tu.mu.Lock()
	return func() {
		tu.mu.Unlock()
		t.mu.Lock()
		if tu.refs--; tu.refs == 0 {
			delete(t.runs, key)
		}
		t.mu.Unlock()
	}
}
