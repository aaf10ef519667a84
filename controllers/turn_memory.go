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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// lastTurns keeps, for each conversation, the last turn this process
// ended, as it wrote it: the next turn continues that turn's transcript
// tail, which the cache strips from ended runs (store.CacheOptions), so
// without it the next turn reads the turn past the cache — one more
// apiserver round trip before its first model request. A copy is used
// only when the cache holds the very same version (UID and
// resourceVersion), so it can never be stale; another replica's turn, or
// a version written since (a notification delivered), is read as before.
// Bounded: at most maxLastTurns conversations, and only turns whose tail
// in status is at most maxLastTurnTail bytes, so a long-lived manager's
// memory does not grow with the conversations it served.
type lastTurns struct {
	mu    sync.Mutex
	by    map[types.NamespacedName]*exagentv1.AgentRun
	order []types.NamespacedName // oldest first, for eviction
}

const (
	maxLastTurns    = 512
	maxLastTurnTail = 64 << 10
)

func newLastTurns() *lastTurns {
	return &lastTurns{by: map[types.NamespacedName]*exagentv1.AgentRun{}}
}

// ended remembers run, written by this process, when it is a turn that
// ended with a small enough tail.
func (l *lastTurns) ended(run *exagentv1.AgentRun) {
	ref := run.Spec.ConversationRef
	if ref == nil || !run.Status.Phase.IsTerminal() || tailBytes(run.Status.History) > maxLastTurnTail {
		return
	}
	key := types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.by[key]; !ok {
		l.order = append(l.order, key)
	}
	l.by[key] = run.DeepCopy()
	for len(l.order) > maxLastTurns {
		delete(l.by, l.order[0])
		l.order = l.order[1:]
	}
}

// get is the remembered whole copy of cached (the cache's stripped copy
// of an ended turn), when it is the very same version.
func (l *lastTurns) get(cached *exagentv1.AgentRun) (*exagentv1.AgentRun, bool) {
	ref := cached.Spec.ConversationRef
	if ref == nil {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.by[types.NamespacedName{Namespace: cached.Namespace, Name: ref.Name}]
	if !ok || w.Name != cached.Name || w.UID != cached.UID || w.ResourceVersion != cached.ResourceVersion {
		return nil, false
	}
	return w.DeepCopy(), true
}

// tailBytes is about what a transcript tail weighs in memory.
func tailBytes(h []exagentv1.Message) int {
	n := 0
	for i := range h {
		n += len(h[i].Content) + 64
		for _, tc := range h[i].ToolCalls {
			n += len(tc.Arguments) + len(tc.Name) + len(tc.ID)
		}
	}
	return n
}
