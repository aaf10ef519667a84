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
