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
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// TestFairShare: with two workers, one namespace alone holds one (the
// other stays free for the next namespace); its other items wait, off the
// queue, and are served first, in turn, when a place frees; an item
// queued again while it waits is not parked twice; a lone worker serves
// namespaces in turn.
func TestFairShare(t *testing.T) {
	item := func(ns, name string) reapItem { return reapItem{key: types.NamespacedName{Namespace: ns, Name: name}} }
	q := workqueue.NewTypedDelayingQueue[reapItem]()
	defer q.ShutDown()
	f := newFairShare(2)
	for _, it := range []reapItem{item("a", "1"), item("a", "2"), item("a", "3"), item("b", "1")} {
		q.Add(it)
	}
	got, fromQueue, quit := f.next(q)
	if got != item("a", "1") || !fromQueue || quit {
		t.Fatalf("first = %v (from the queue %v), want a/1", got, fromQueue)
	}
	// a/1 is stuck (a tarpit): the second worker skips a/2 and a/3 for b/1.
	got, _, _ = f.next(q)
	if got != item("b", "1") {
		t.Fatalf("second = %v, want b/1: namespace a holds its share", got)
	}
	q.Add(item("a", "2")) // queued again while it waits
	f.done(item("b", "1"))
	q.Done(item("b", "1"))
	f.done(item("a", "1"))
	got, fromQueue, _ = f.next(q)
	if got != item("a", "2") || fromQueue {
		t.Fatalf("after a/1 = %v (from the queue %v), want the parked a/2", got, fromQueue)
	}
	if n, p := f.inFlight["a"], len(f.parked["a"]); n != 1 || p != 1 {
		t.Errorf("namespace a: %d in flight, %d parked; want 1 and 1 (a/2 not parked twice)", n, p)
	}

	one := newFairShare(1)
	q1 := workqueue.NewTypedDelayingQueue[reapItem]()
	defer q1.ShutDown()
	for _, it := range []reapItem{item("a", "1"), item("a", "2"), item("b", "1")} {
		q1.Add(it)
	}
	var order []reapItem
	for range 3 {
		it, fromQueue, _ := one.next(q1)
		order = append(order, it)
		one.done(it)
		if fromQueue {
			q1.Done(it)
		}
	}
	if order[0] != item("a", "1") || len(order) != 3 {
		t.Errorf("a lone worker served %v", order)
	}
}
