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

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// listing is the tests' listing: one tool, echo, with a schema. The
// Refresher only keeps it and counts it (size).
type listing struct{ schema string }

// size is what tools counts for such a listing: 64 for the listing, 64
// and the name, description and schema for its tool.
func size(l *listing) int64 { return 64 + 64 + int64(len("echo")+len(l.schema)) }

// servers is a fake Fetch: per URL it answers a listing, fails, or hangs
// until released or the listing's context ends; it counts what it saw.
type servers struct {
	mu          sync.Mutex
	calls       map[string]int
	inFlight    int
	maxInFlight int
	hang        map[string]chan struct{}
	fail        map[string]error
	schema      map[string]string
	started     chan string
}

func newServers() *servers {
	return &servers{calls: map[string]int{}, hang: map[string]chan struct{}{}, fail: map[string]error{},
		schema: map[string]string{}, started: make(chan string, 1024)}
}

func (s *servers) fetch(ctx context.Context, url string, headers map[string]string) (*listing, error) {
	s.mu.Lock()
	s.calls[url]++
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	gate, err, schema := s.hang[url], s.fail[url], s.schema[url]
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	s.started <- url
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	if schema == "" {
		schema = `{"type":"object"}`
	}
	return &listing{schema: schema}, nil
}

func (s *servers) count(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[url]
}

func (s *servers) set(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// woken collects the waiters the refresher wakes.
type woken chan types.NamespacedName

func (w woken) wake(ns []Waiter) {
	for _, n := range ns {
		w <- n.NamespacedName
	}
}

func (w woken) wait(t *testing.T, want types.NamespacedName) {
	t.Helper()
	select {
	case got := <-w:
		if got != want {
			t.Fatalf("woke %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%v was never woken", want)
	}
}

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func start(t *testing.T, s *servers, clk *clocktesting.FakePassiveClock, o Options) (*Refresher[listing], woken) {
	t.Helper()
	r := New(s.fetch, size, clk, o)
	w := make(woken, 1024)
	r.SetWake(w.wake)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r, w
}

func req(url string, after time.Time, waiter string) Request {
	return Request{Key: "k:" + url, URL: url, Tenant: "ns", After: after, Waiter: Waiter{NamespacedName: types.NamespacedName{Namespace: "ns", Name: waiter}}}
}

// TestRefresherFreshness: a listing is fresh for a request only when its
// fetch began at or after the request's After; Get never waits, it
// returns what it has and the refresh ends beside it.
func TestRefresherFreshness(t *testing.T) {
	s := newServers()
	clk := clocktesting.NewFakePassiveClock(t0)
	r, w := start(t, s, clk, Options{})

	st := r.Get(req("a", t0, "r1"))
	if st.Fresh || st.Listing != nil || !st.Pending {
		t.Fatalf("first Get = %+v, want nothing yet and a refresh pending", st)
	}
	w.wait(t, types.NamespacedName{Namespace: "ns", Name: "r1"})
	if st = r.Get(req("a", t0, "r1")); !st.Fresh || !st.FetchedAt.Equal(t0) {
		t.Fatalf("after the refresh: %+v, want fresh, fetched at t0", st)
	}

	// The server changes; a caller that needs it no older than t1 gets the
	// old listing, not fresh, and a refresh; a caller content with t0 does
	// not cause one.
	s.set(func() { s.schema["a"] = `{"type":"object","required":["x"]}` })
	clk.SetTime(t0.Add(time.Second))
	if st = r.Get(req("a", t0, "")); !st.Fresh || st.Pending {
		t.Fatalf("After t0 = %+v, want fresh with no refresh", st)
	}
	if n := s.count("a"); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	st = r.Get(req("a", t0.Add(time.Second), "r2"))
	if st.Fresh || st.Listing == nil || !st.Pending {
		t.Fatalf("After t1 = %+v, want the stale listing and a refresh pending", st)
	}
	w.wait(t, types.NamespacedName{Namespace: "ns", Name: "r2"})
	st = r.Get(req("a", t0.Add(time.Second), "r2"))
	if !st.Fresh || !strings.Contains(st.Listing.schema, "required") {
		t.Fatalf("after the second refresh: %+v, want fresh with the new schema", st)
	}
	// After in the future is now: never a listing no refresh can satisfy.
	if st = r.Get(req("a", t0.Add(time.Hour), "")); !st.Fresh {
		t.Fatalf("After past now = %+v, want fresh (After counts as now)", st)
	}
}

// TestRefresherSingleFlightAndBounds: one listing in flight per server
// however many callers ask; at most Concurrency in all; a tenant takes at
// most PerTenant slots, so another tenant's server starts at once.
func TestRefresherSingleFlightAndBounds(t *testing.T) {
	s := newServers()
	clk := clocktesting.NewFakePassiveClock(t0)
	r, _ := start(t, s, clk, Options{Concurrency: 4, PerTenant: 2})
	release := make(chan struct{})
	for i := range 10 {
		s.set(func() { s.hang[fmt.Sprintf("hostile-%d", i)] = release })
	}
	for range 50 {
		for i := range 10 {
			r.Get(Request{Key: fmt.Sprintf("h%d", i), URL: fmt.Sprintf("hostile-%d", i), Tenant: "hostile", After: t0})
		}
	}
	for range 2 {
		<-s.started
	}
	r.Get(Request{Key: "ok", URL: "ok", Tenant: "other", After: t0})
	if got := <-s.started; got != "ok" {
		t.Fatalf("started %s, want the other tenant's server at once", got)
	}
	waitFor(t, "the other tenant's listing", func() bool { st, _ := r.Peek("ok"); return st.Listing != nil })
	st := r.Stats()
	if st.InFlight != 2 || st.Queued != 8 {
		t.Errorf("stats %+v, want the hostile tenant at its 2 slots and 8 queued", st)
	}
	close(release)
	waitFor(t, "every refresh to end", func() bool { st := r.Stats(); return st.InFlight == 0 && st.Queued == 0 })
	for i := range 10 {
		if n := s.count(fmt.Sprintf("hostile-%d", i)); n != 1 {
			t.Errorf("hostile-%d listed %d times for 50 asks, want 1", i, n)
		}
	}
	if st := r.Stats(); st.MaxInFlight > 4 || s.maxInFlight > 4 {
		t.Errorf("at most %d (refresher) / %d (servers) at once, want ≤ 4", st.MaxInFlight, s.maxInFlight)
	}
}

// TestRefresherTimeout: a server that never answers costs one slot for
// Timeout, then is a failure naming the wait.
func TestRefresherTimeout(t *testing.T) {
	s := newServers()
	s.hang["slow"] = make(chan struct{})
	r, w := start(t, s, clocktesting.NewFakePassiveClock(t0), Options{Timeout: 50 * time.Millisecond})
	r.Get(req("slow", t0, "r"))
	w.wait(t, types.NamespacedName{Namespace: "ns", Name: "r"})
	st := r.Get(req("slow", t0, "r"))
	if st.Err == nil || !strings.Contains(st.Err.Error(), "no answer within 50ms") || st.Failures != 1 || st.Pending {
		t.Fatalf("state %+v, want the timeout as the error, backing off", st)
	}
}

// TestRefresherBackoff drives the clock second by second while a caller
// asks every second: a failing server is asked at 0, 1, 3, 7, 15, 23, …
// (base 1 s, doubling, capped at 8 s), not every second; once it answers
// the failures are forgotten.
func TestRefresherBackoff(t *testing.T) {
	s := newServers()
	s.fail["down"] = errors.New("connection refused")
	clk := clocktesting.NewFakePassiveClock(t0)
	r, _ := start(t, s, clk, Options{BackoffBase: time.Second, BackoffCap: 8 * time.Second})
	var asked []int
	last := 0
	for sec := range 60 {
		clk.SetTime(t0.Add(time.Duration(sec) * time.Second))
		st := r.Get(req("down", clk.Now(), ""))
		waitFor(t, "the refresh to end", func() bool { return r.Stats().InFlight == 0 && r.Stats().Queued == 0 })
		if n := s.count("down"); n != last {
			asked, last = append(asked, sec), n
		}
		_ = st
	}
	want := []int{0, 1, 3, 7, 15, 23, 31, 39, 47, 55}
	if fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Fatalf("asked at %v, want %v", asked, want)
	}
	st := r.Get(req("down", time.Time{}, ""))
	if st.Failures != len(want) || st.Err == nil || !st.RetryAt.Equal(t0.Add(63*time.Second)) {
		t.Fatalf("state %+v, want %d failures, the error, retry at +63s", st, len(want))
	}

	s.set(func() { delete(s.fail, "down") })
	clk.SetTime(t0.Add(63 * time.Second))
	r.Get(req("down", clk.Now(), ""))
	waitFor(t, "the refresh to end", func() bool { return r.Stats().InFlight == 0 && r.Stats().Queued == 0 })
	if st := r.Get(req("down", clk.Now(), "")); !st.Fresh || st.Err != nil || st.Failures != 0 {
		t.Fatalf("after recovery %+v, want fresh, no error", st)
	}
}

// TestRefresherCacheBounds: entries and bytes are bounded, least recently
// used evicted first among tenants that hold as much (here each server is
// a tenant of its own: one tenant never holds more than its quota); an
// entry being refreshed is never evicted (ErrFull when nothing else can
// go); a listing larger than one server may take is a failure; servers
// nobody asked about for Idle are forgotten.
func TestRefresherCacheBounds(t *testing.T) {
	s := newServers()
	clk := clocktesting.NewFakePassiveClock(t0)
	r, _ := start(t, s, clk, Options{MaxEntries: 3, MaxBytes: 3000, MaxListingBytes: 1500, Idle: time.Minute})
	req := func(url string, after time.Time, _ string) Request {
		return Request{Key: "k:" + url, URL: url, Tenant: "t-" + url, After: after}
	}
	fill := func(urls ...string) {
		t.Helper()
		for _, u := range urls {
			r.Get(req(u, t0, ""))
			waitFor(t, "the refresh of "+u, func() bool { st, _ := r.Peek("k:" + u); return st.Listing != nil || st.Err != nil })
		}
	}
	fill("a", "b", "c")
	r.Get(req("a", t0, "")) // a is now the most recently used
	fill("d")
	if _, ok := r.Peek("k:b"); ok {
		t.Errorf("b (least recently used) still cached")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := r.Peek("k:" + k); !ok {
			t.Errorf("%s evicted, want kept", k)
		}
	}
	if st := r.Stats(); st.Entries != 3 {
		t.Errorf("%d entries, want 3", st.Entries)
	}

	// Bytes: two listings of ~1.3 KB fit 3000; the third evicts the
	// least recently used.
	big := `{"type":"object","description":"` + strings.Repeat("x", 1100) + `"}`
	s.set(func() { s.schema["e"], s.schema["f"], s.schema["g"] = big, big, big })
	fill("e", "f", "g")
	if st := r.Stats(); st.Bytes > 3000 || st.Entries != 2 {
		t.Errorf("%d bytes in %d entries cached, want ≤ 3000 in 2", st.Bytes, st.Entries)
	}
	if _, ok := r.Peek("k:e"); ok {
		t.Errorf("e (least recently used) still cached past the byte bound")
	}
	s.set(func() { s.schema["huge"] = `{"description":"` + strings.Repeat("x", 2000) + `"}` })
	fill("huge")
	if st, _ := r.Peek("k:huge"); st.Listing != nil || st.Err == nil || !strings.Contains(st.Err.Error(), "more than the 1500") {
		t.Errorf("huge listing: %+v, want refused", st)
	}

	// Busy entries are never evicted: with all three refreshing, a fourth
	// server is refused for now.
	gate := make(chan struct{})
	s.set(func() {
		for _, u := range []string{"p", "q", "r"} {
			s.hang[u] = gate
		}
	})
	for _, u := range []string{"p", "q", "r"} {
		r.Get(req(u, t0, ""))
	}
	if st := r.Get(req("z", t0, "")); !errors.Is(st.Err, ErrFull) {
		t.Errorf("a fourth server while three refresh: %+v, want ErrFull", st)
	}
	close(gate)
	waitFor(t, "the refreshes to end", func() bool { return r.Stats().InFlight == 0 })

	// Idle: a minute later nobody asked about p, q, r: forgotten.
	clk.SetTime(t0.Add(2 * time.Minute))
	r.Get(req("z", clk.Now(), ""))
	if st := r.Stats(); st.Entries != 1 {
		t.Errorf("%d entries after the idle time, want only z", st.Entries)
	}
}

// TestRefresherStop: the stop cancels a listing in flight and drops the
// queue; Start returns.
func TestRefresherStop(t *testing.T) {
	s := newServers()
	s.hang["x"] = make(chan struct{})
	r := New(s.fetch, size, clocktesting.NewFakePassiveClock(t0), Options{Concurrency: 1})
	r.Get(req("x", t0, "")) // before Start: queued, not begun
	r.Get(req("y", t0, ""))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	<-s.started
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after the stop")
	}
	if st := r.Stats(); st.InFlight != 0 || st.Queued != 0 || s.count("y") != 0 {
		t.Errorf("after the stop: %+v, y listed %d times; want nothing left", st, s.count("y"))
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
