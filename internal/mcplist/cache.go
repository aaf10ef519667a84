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

// The cache's bounds (Options.MaxEntries, MaxEntriesPerTenant, MaxBytes,
// Idle) are kept by the functions below, always under Refresher.mu. An
// entry whose refresh is queued or running is never removed: its waiters
// and its slot refer to it. Its listing, though, may be dropped for room;
// the refresh refills it.
//
// The table is shared by every tenant, so room is made from the tenant
// that holds the most — places when a place is wanted, bytes when bytes
// are — least recently used first: a tenant that names a thousand
// servers, or lists huge ones, gives up its own entries before anyone
// else's. A tenant is only evicted for a place by one that will then hold
// no more than it; for bytes, by one that holds no more than it, unless
// all the asker has is the listing just stored (which stays). A tenant at
// MaxEntriesPerTenant is refused a further server (Get: TenantFullError)
// before any room is made for it.

// holding is what one tenant has in the cache.
type holding struct {
	entries int
	bytes   int64
}

func (r *Refresher[T]) holding(tenant string) *holding {
	h := r.held[tenant]
	if h == nil {
		h = &holding{}
		r.held[tenant] = h
	}
	return h
}

// setSize sets what e's listing costs, in all and to its tenant.
func (r *Refresher[T]) setSize(e *entry[T], size int64) {
	r.bytes += size - e.size
	r.holding(e.tenant).bytes += size - e.size
	e.size = size
}

// sweep forgets the servers nobody asked about for Options.Idle: the
// Agents that used them changed or went away (no Agent's run reads them).
// The LRU list is in order of use, so the walk stops at the first entry
// used since the cutoff.
func (r *Refresher[T]) sweep(now time.Time) {
	cutoff := now.Add(-r.o.Idle)
	for el := r.lru.Back(); el != nil; {
		e := el.Value.(*entry[T])
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

// makeRoom evicts until one more entry of tenant (add = 1) fits
// Options.MaxEntries and the listings fit Options.MaxBytes, from the
// tenant holding the most first (see above). keep is never evicted (the
// listing just stored). It reports false when the entries cannot fit:
// every other entry is busy.
func (r *Refresher[T]) makeRoom(add int, tenant string, keep *entry[T]) bool {
	for {
		tooMany, tooBig := len(r.entries)+add > r.o.MaxEntries, r.bytes > r.o.MaxBytes
		if !tooMany && !tooBig {
			return true
		}
		e := r.victim(tooMany, tenant, add, keep)
		switch {
		case e == nil:
			return !tooMany
		case e.refresh == idle:
			r.remove(e)
		default: // busy, over the bytes: its listing goes, the refresh refills it
			r.setSize(e, 0)
			e.listing, e.fetchedAt = nil, time.Time{}
		}
	}
}

// victim is the entry makeRoom gives up next: one that can go of the
// tenant holding the most places (byPlaces; the asking tenant counts the
// add it asks for) or bytes, the asking tenant's own first on a tie, then
// the least recently used. For a place, an entry can go when it is idle;
// for bytes, when it has a listing (an idle entry goes with it, a busy
// one keeps its place). nil when none can.
func (r *Refresher[T]) victim(byPlaces bool, tenant string, add int, keep *entry[T]) *entry[T] {
	held := func(t string) int64 {
		h := r.held[t]
		switch {
		case !byPlaces:
			return h.bytes
		case t == tenant:
			return int64(h.entries + add)
		}
		return int64(h.entries)
	}
	var best *entry[T]
	var most int64
	for el := r.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*entry[T])
		if e == keep || byPlaces && e.refresh != idle || !byPlaces && e.listing == nil {
			continue
		}
		n := held(e.tenant)
		if best == nil || n > most || n == most && e.tenant == tenant && best.tenant != tenant {
			best, most = e, n
		}
	}
	return best
}

func (r *Refresher[T]) remove(e *entry[T]) {
	r.lru.Remove(e.elem)
	delete(r.entries, e.key)
	r.setSize(e, 0)
	if h := r.held[e.tenant]; h != nil {
		if h.entries--; h.entries <= 0 {
			delete(r.held, e.tenant)
		}
	}
}
