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

package trigger

import (
	"time"
)

// Window remembers keys for a while: delivery ids (a replay is refused)
// and dedup keys (one run per key per window). It is bounded: at most max
// keys; when full, expired keys go first, then the oldest — so a flood of
// distinct keys costs a bounded table, never the process's memory, and at
// worst lets an old key through once more (it never refuses a new one).
// Not safe for concurrent use: the caller holds its lock.
type Window struct {
	ttl   time.Duration
	max   int
	until map[string]time.Time
	order []entry // oldest first; an entry is stale once its key was admitted again
}

type entry struct {
	key   string
	until time.Time
}

// NewWindow remembers up to size keys (at least 1) for ttl each.
func NewWindow(ttl time.Duration, size int) *Window {
	return &Window{ttl: ttl, max: max(size, 1), until: map[string]time.Time{}}
}

// First reports whether key is new at now (not seen within the window),
// and remembers it until now+ttl when it is.
func (w *Window) First(key string, now time.Time) bool {
	if until, ok := w.until[key]; ok && now.Before(until) {
		return false
	}
	until := now.Add(w.ttl)
	w.until[key] = until
	w.order = append(w.order, entry{key: key, until: until})
	w.trim(now)
	return true
}

// Forget drops key: it passes again (a delivery whose run could not be
// created is retried by its sender under the same id).
func (w *Window) Forget(key string) { delete(w.until, key) }

// Len is how many keys are remembered.
func (w *Window) Len() int { return len(w.until) }

// trim drops, from the oldest, stale entries, expired keys, and keys past
// max.
func (w *Window) trim(now time.Time) {
	for len(w.order) > 0 {
		e := w.order[0]
		cur, ok := w.until[e.key]
		live := ok && cur.Equal(e.until)
		if live && now.Before(e.until) && len(w.until) <= w.max {
			return
		}
		w.order = w.order[1:]
		if live {
			delete(w.until, e.key)
		}
	}
}
