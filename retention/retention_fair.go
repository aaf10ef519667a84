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

package retention

import (
	"slices"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// fairShare gives each namespace its own share of the reaper's workers
// (docs/architecture.md §14: one tenant cannot harm another). An archive
// attempt holds its worker until the sink answers or the archive timeout
// passes, so with one FIFO queue a tenant whose sink accepts and never
// answers (a tarpit) would hold every worker, and every other namespace's
// deletions would wait minutes behind it. Here a namespace holds at most
// its share of the workers at once:
//
//	share = max(1, min(workers-1, workers/active))
//
// where active counts the namespaces with work in hand or waiting. One
// namespace alone leaves a worker free for the next to arrive (with two
// or more workers); n namespaces split them evenly. An item over its
// namespace's share waits here, off the queue, and is taken first — in
// turn, namespace by namespace — by the next worker that frees a place.
// So one tarpit namespace never delays another's retention; k tarpit
// namespaces at once need more than k workers (--retention-workers).
//
// Memory only, like the queue: what it holds is found again by the
// informers' initial list after a restart.
type fairShare struct {
	workers int

	mu       sync.Mutex
	inFlight map[string]int
	// parked holds, per namespace, the items over its share, in order;
	// turn lists the namespaces that have some, in the order to serve.
	parked map[string][]reapItem
	turn   []string
}

func newFairShare(workers int) *fairShare {
	return &fairShare{workers: max(workers, 1), inFlight: map[string]int{}, parked: map[string][]reapItem{}}
}

// share is how many workers one namespace may hold now. Callers hold mu.
func (f *fairShare) share() int {
	active := len(f.inFlight)
	for ns := range f.parked {
		if f.inFlight[ns] == 0 {
			active++
		}
	}
	if f.workers == 1 {
		return 1
	}
	return max(1, min(f.workers-1, f.workers/max(active, 1)))
}

// next is the item a worker works next: one waiting for its namespace's
// share if one may go now, else the queue's next, parked instead when its
// namespace holds its share. fromQueue says whether the queue must be
// told Done; quit that the queue is shut down (what is parked is dropped:
// the next start finds it again).
func (f *fairShare) next(q workqueue.TypedDelayingInterface[reapItem]) (item reapItem, fromQueue, quit bool) {
	for {
		if item, ok := f.unpark(); ok {
			return item, false, false
		}
		item, quit := q.Get()
		if quit {
			return item, false, true
		}
		if f.admit(item) {
			return item, true, false
		}
		q.Done(item) // parked: it is this type's now, not the queue's
	}
}

// admit counts item in flight when its namespace is under its share, or
// parks it (once: an item parked already is not parked twice).
func (f *fairShare) admit(item reapItem) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ns := item.key.Namespace
	if slices.Contains(f.parked[ns], item) {
		return false
	}
	if len(f.parked[ns]) == 0 && f.inFlight[ns] < f.share() {
		f.inFlight[ns]++
		return true
	}
	if len(f.parked[ns]) == 0 {
		f.turn = append(f.turn, ns)
	}
	f.parked[ns] = append(f.parked[ns], item)
	return false
}

// unpark takes the first parked item, in turn, whose namespace is under
// its share, and counts it in flight.
func (f *fairShare) unpark() (reapItem, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	share := f.share()
	for i, ns := range f.turn {
		if f.inFlight[ns] >= share {
			continue
		}
		item := f.parked[ns][0]
		if f.parked[ns] = f.parked[ns][1:]; len(f.parked[ns]) == 0 {
			delete(f.parked, ns)
			f.turn = slices.Delete(f.turn, i, i+1)
		} else { // served: to the back of the turn
			f.turn = append(slices.Delete(f.turn, i, i+1), ns)
		}
		f.inFlight[ns]++
		return item, true
	}
	return reapItem{}, false
}

// done counts item out of flight.
func (f *fairShare) done(item reapItem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ns := item.key.Namespace
	if f.inFlight[ns]--; f.inFlight[ns] <= 0 {
		delete(f.inFlight, ns)
	}
}
