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

package mcplist

import "time"

// The cache's bounds (Options.MaxEntries, MaxBytes, Idle) are kept by the
// functions below, always under Refresher.mu. An entry whose refresh is
// queued or running is never removed: its waiters and its slot refer to
// it. Its listing, though, may be dropped for room; the refresh refills it.

// sweep forgets the servers nobody asked about for Options.Idle: the
// Agents that used them changed or went away (no Agent's run reads them).
// The LRU list is in order of use, so the walk stops at the first entry
// used since the cutoff.
func (r *Refresher) sweep(now time.Time) {
	cutoff := now.Add(-r.o.Idle)
	for el := r.lru.Back(); el != nil; {
		e := el.Value.(*entry)
		if !e.used.Before(cutoff) {
			return
		}
		prev := el.Prev()
		if e.refresh == idle {
			r.remove(e)
		}
		el = prev
	}
}

// makeRoom evicts, least recently used first, until one more entry (add
// = 1) fits Options.MaxEntries and the listings fit Options.MaxBytes.
// keep is never evicted (the listing just stored). It reports false when
// the entries cannot fit: every other entry is busy.
func (r *Refresher) makeRoom(add int, keep *entry) bool {
	over := func() (entries, bytes bool) {
		return len(r.entries)+add > r.o.MaxEntries, r.bytes > r.o.MaxBytes
	}
	for el := r.lru.Back(); el != nil; {
		tooMany, tooBig := over()
		if !tooMany && !tooBig {
			return true
		}
		e := el.Value.(*entry)
		prev := el.Prev()
		switch {
		case e == keep:
		case e.refresh == idle:
			r.remove(e)
		case tooBig && e.listing != nil:
			r.bytes -= e.size
			e.listing, e.size, e.fetchedAt = nil, 0, time.Time{}
		}
		el = prev
	}
	tooMany, _ := over()
	return !tooMany
}

func (r *Refresher) remove(e *entry) {
	r.lru.Remove(e.elem)
	delete(r.entries, e.key)
	r.bytes -= e.size
}
