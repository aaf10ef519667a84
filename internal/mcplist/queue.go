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

// fairQueue holds the refreshes waiting for a slot: first in, first out
// within a tenant, round-robin between tenants, so a tenant that queues a
// hundred servers delays another tenant's one by one turn, not a hundred.
type fairQueue[T any] struct {
	byTenant map[string][]*entry[T]
	ring     []string // tenants with queued entries, in turn order
	next     int      // index in ring of the tenant whose turn is next
	n        int
}

func newFairQueue[T any]() fairQueue[T] { return fairQueue[T]{byTenant: map[string][]*entry[T]{}} }

func (q *fairQueue[T]) len() int { return q.n }

func (q *fairQueue[T]) push(e *entry[T]) {
	if _, ok := q.byTenant[e.tenant]; !ok {
		q.ring = append(q.ring, e.tenant)
	}
	q.byTenant[e.tenant] = append(q.byTenant[e.tenant], e)
	q.n++
}

// pop takes the head of the next tenant, in turn, that may start one now
// (may: its share of the slots is not used up); nil when none may.
func (q *fairQueue[T]) pop(may func(tenant string) bool) *entry[T] {
	for i := range q.ring {
		at := (q.next + i) % len(q.ring)
		t := q.ring[at]
		if !may(t) {
			continue
		}
		s := q.byTenant[t]
		e := s[0]
		s[0] = nil
		q.n--
		if len(s) == 1 {
			delete(q.byTenant, t)
			q.ring = append(q.ring[:at], q.ring[at+1:]...)
			q.next = at // the tenant after t moved into t's place
		} else {
			q.byTenant[t] = s[1:]
			q.next = at + 1
		}
		if len(q.ring) > 0 {
			q.next %= len(q.ring)
		} else {
			q.next = 0
		}
		return e
	}
	return nil
}

// drain empties the queue and returns what it held.
func (q *fairQueue[T]) drain() []*entry[T] {
	var out []*entry[T]
	for _, t := range q.ring {
		out = append(out, q.byTenant[t]...)
	}
	*q = newFairQueue[T]()
	return out
}
