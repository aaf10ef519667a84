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
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	// DefaultConcurrency bounds the listings in flight in all: a listing
	// is a handful of small requests, so a few slots serve hundreds of
	// servers; it is the bound on what hanging servers can hold.
	DefaultConcurrency = 8
	// DefaultTimeout bounds one listing (connect, initialize, every page).
	DefaultTimeout = 15 * time.Second
	// DefaultMaxEntries bounds the servers remembered.
	DefaultMaxEntries = 1024
	// DefaultMaxEntriesPerTenant bounds the servers one tenant (namespace)
	// has remembered: an eighth of the default table, so a namespace naming
	// a thousand server URLs takes 128 places and the others keep theirs.
	DefaultMaxEntriesPerTenant = DefaultMaxEntries / 8
	// DefaultMaxBytes bounds the listings remembered, in all.
	DefaultMaxBytes = 64 << 20
	// DefaultMaxListingBytes bounds one listing: more schema and
	// description than this would not fit a model request anyway. The
	// Fetch counts it while it reads (every page's answer together, as it
	// comes off the wire) and stops there; the Refresher checks what it
	// keeps against it again.
	DefaultMaxListingBytes = 4 << 20
	// DefaultIdle is how long a server nobody asked about is remembered.
	DefaultIdle = 10 * time.Minute
	// DefaultBackoffBase and DefaultBackoffCap shape the wait after a
	// failed listing: base, twice as long after each further failure, at
	// most cap. The cap is how late a server that came back is noticed.
	DefaultBackoffBase = time.Second
	DefaultBackoffCap  = time.Minute
	// DefaultMaxWaiters bounds the callers woken per server; past it,
	// callers find the result when their own requeue comes.
	DefaultMaxWaiters = 4096
)

// Options bound a Refresher. Zero fields take the defaults.
type Options struct {
	Concurrency int
	// PerTenant bounds one tenant's listings in flight (default: half of
	// Concurrency, at least 1).
	PerTenant  int
	Timeout    time.Duration
	MaxEntries int
	// MaxEntriesPerTenant bounds the servers one tenant has remembered
	// (at most MaxEntries); a tenant at it is refused a further server
	// (TenantFullError) rather than evict anyone's.
	MaxEntriesPerTenant int
	MaxBytes            int64
	// MaxListingBytes bounds one listing: the Fetch counts it while it
	// reads (every page together) and stops there, and what it returns
	// is checked against it again.
	MaxListingBytes int64
	Idle            time.Duration
	BackoffBase     time.Duration
	BackoffCap      time.Duration
	MaxWaiters      int
}

// WithDefaults fills the zero fields.
func (o Options) WithDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.PerTenant <= 0 {
		o.PerTenant = max(1, o.Concurrency/2)
	}
	o.PerTenant = min(o.PerTenant, o.Concurrency)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxEntriesPerTenant <= 0 {
		o.MaxEntriesPerTenant = DefaultMaxEntriesPerTenant
	}
	o.MaxEntriesPerTenant = min(o.MaxEntriesPerTenant, o.MaxEntries)
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxListingBytes <= 0 {
		o.MaxListingBytes = DefaultMaxListingBytes
	}
	o.MaxListingBytes = min(o.MaxListingBytes, o.MaxBytes)
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = DefaultBackoffBase
	}
	if o.BackoffCap <= 0 {
		o.BackoffCap = DefaultBackoffCap
	}
	o.BackoffCap = max(o.BackoffCap, o.BackoffBase)
	if o.MaxWaiters <= 0 {
		o.MaxWaiters = DefaultMaxWaiters
	}
	return o
}

// Fetch lists one server: T is the listing, which the Refresher only keeps
// and hands back (the caller's type: tools' is loop.MCPListing). ctx
// carries the listing's timeout and the tenant that asked (TenantOf): a
// fetch dials under that tenant's egress policy, and an entry is never
// shared between tenants (the key names it).
type Fetch[T any] func(ctx context.Context, url string, headers map[string]string) (*T, error)

// Size is what a listing costs the cache, in bytes: what Options.MaxBytes
// and MaxListingBytes bound. It counts the listing's strings and schemas
// (the structure around them is small beside them), as its Fetch counts
// while it reads.
type Size[T any] func(*T) int64

// Request is one caller's need of one server's listing.
type Request struct {
	// Key identifies the server and the credentials it is asked with (a
	// different token may see different tools); it holds no secret.
	Key string
	// URL and Headers are what a refresh sends; Headers are kept only
	// while the refresh is queued or running.
	URL     string
	Headers map[string]string
	// Tenant is whose slot share a refresh takes (the run's namespace).
	Tenant string
	// After: a listing whose fetch began at or after this instant is
	// fresh for the caller (zero: any listing is). An instant later than
	// the clock's now counts as now.
	After time.Time
	// Waiter, when set, is woken (SetWake) once the refresh this request
	// waits for has ended, well or not.
	Waiter Waiter
}

// Waiter is one caller a refresh wakes when it ends: an object of some
// kind (a run, an Agent whose readiness waits on the listing). Kind is
// for the wake function to route on; the Refresher never reads it.
type Waiter struct {
	Kind string
	types.NamespacedName
}

// Known is what the Refresher knows of a server, as one caller needs it:
// the last listing read and its State.
type Known[T any] struct {
	// Listing is the last listing read, possibly older than After (a
	// caller that starts no IO may use it); nil when none was read.
	Listing *T
	State
}

// State is what the Refresher knows of a server but the listing itself:
// what a caller says about a server it waits for. It names no listing
// type, so a caller's own records can carry it.
type State struct {
	// FetchedAt is when the fetch of the listing began.
	FetchedAt time.Time
	// Fresh: the listing satisfies the request's After.
	Fresh bool
	// Err is why the last listing failed, while the server keeps failing
	// (nil once a listing succeeds); Failures counts the failures in a row.
	Err      error
	Failures int
	// RetryAt: no refresh starts before it (the server's backoff).
	RetryAt time.Time
	// Pending: a refresh is queued or running, since PendingSince.
	Pending      bool
	PendingSince time.Time
}

// Stats are the Refresher's counters (tests, diagnostics).
type Stats struct {
	// InFlight listings now, and the most there ever were at once.
	InFlight, MaxInFlight int
	// Queued refreshes waiting for a slot.
	Queued int
	// Entries and Bytes remembered.
	Entries int
	Bytes   int64
	// Fetches started and Failures among those ended, ever.
	Fetches, Failures int64
}

// ErrFull is a request for a server not remembered when every entry is
// busy being refreshed: the caller asks again later.
var ErrFull = errors.New("too many MCP servers are being listed at once; asking again shortly")

// TenantFullError is a request for a server not remembered from a tenant
// that already has Options.MaxEntriesPerTenant servers remembered: that
// tenant's own mistake (or its hostility), so it is refused, and no
// entry of anyone is evicted for it. It lasts until one of the tenant's
// servers is forgotten (nobody asked about it for Options.Idle).
type TenantFullError struct {
	URL    string
	Tenant string
	Max    int
	Idle   time.Duration
}

func (e *TenantFullError) Error() string {
	return fmt.Sprintf("the MCP server %s is not listed: namespace %q already has %d MCP servers (one per url and credentials) "+
		"in the manager's listing cache, the most one namespace may have; a server no Agent or run asked about for %s is forgotten, "+
		"freeing its place: remove the mcp tools nobody needs", e.URL, e.Tenant, e.Max, e.Idle)
}

type refreshState int

const (
	idle refreshState = iota
	queued
	running
)

// entry is one server key.
type entry[T any] struct {
	key, url string
	elem     *list.Element // in Refresher.lru
	used     time.Time

	listing   *T
	fetchedAt time.Time
	size      int64

	err      error
	failures int
	retryAt  time.Time

	// tenant owns the entry (the key names it: an entry is never shared
	// between tenants); its places and bytes are counted against it.
	tenant string

	refresh refreshState
	since   time.Time         // queued or begun at
	headers map[string]string // while queued
	waiters map[Waiter]struct{}
}

func (e *entry[T]) state(after time.Time) Known[T] {
	s := State{FetchedAt: e.fetchedAt, Err: e.err, Failures: e.failures, RetryAt: e.retryAt}
	s.Fresh = e.listing != nil && !e.fetchedAt.Before(after)
	if e.refresh != idle {
		s.Pending, s.PendingSince = true, e.since
	}
	return Known[T]{Listing: e.listing, State: s}
}

// Refresher lists MCP servers beside the reconcile workers and remembers
// the answers (see the package doc). It is a manager.Runnable: refreshes
// run only between Start and the end of its context. Safe for concurrent use.
// T is the listing (Fetch).
type Refresher[T any] struct {
	fetch Fetch[T]
	size  Size[T]
	clock clock.PassiveClock
	o     Options

	mu       sync.Mutex
	ctx      context.Context // Start's, nil before it and after the stop
	entries  map[string]*entry[T]
	lru      list.List // of *entry[T], most recently used first
	bytes    int64
	queue    fairQueue[T]
	inFlight int
	byTenant map[string]int // listings in flight, per tenant
	held     map[string]*holding
	wake     func([]Waiter)
	stats    Stats
	wg       sync.WaitGroup
}

// New returns a Refresher that lists with fetch, counts what a listing
// costs with size and reads time from clk (the clock the callers' After
// instants come from; the real clock when nil).
func New[T any](fetch Fetch[T], size Size[T], clk clock.PassiveClock, o Options) *Refresher[T] {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Refresher[T]{fetch: fetch, size: size, clock: clk, o: o.WithDefaults(),
		entries: map[string]*entry[T]{}, byTenant: map[string]int{}, held: map[string]*holding{}, queue: newFairQueue[T]()}
}

// Options are the Refresher's bounds, defaults filled.
func (r *Refresher[T]) Options() Options { return r.o }

// SetWake sets what is called, off the Refresher's lock, with the waiters
// of a refresh that ended. It must not block for long: a listing slot
// waits for it.
func (r *Refresher[T]) SetWake(wake func([]Waiter)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wake = wake
}

// Get returns what is known of req's server. When that is not fresh for
// req, a refresh is asked for — unless one is already queued or running,
// or the server's backoff has not ended — and Get returns at once: it
// never waits for the network.
func (r *Refresher[T]) Get(req Request) Known[T] {
	now := r.clock.Now()
	after := req.After
	if after.After(now) {
		after = now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now)
	e, ok := r.entries[req.Key]
	if !ok {
		if h := r.held[req.Tenant]; h != nil && h.entries >= r.o.MaxEntriesPerTenant {
			return Known[T]{State: State{Err: &TenantFullError{URL: req.URL, Tenant: req.Tenant, Max: r.o.MaxEntriesPerTenant, Idle: r.o.Idle}}}
		}
		if !r.makeRoom(1, req.Tenant, nil) {
			return Known[T]{State: State{Err: ErrFull}}
		}
		e = &entry[T]{key: req.Key, url: req.URL, tenant: req.Tenant}
		e.elem = r.lru.PushFront(e)
		r.entries[req.Key] = e
		r.holding(e.tenant).entries++
	}
	e.used = now
	r.lru.MoveToFront(e.elem)
	if s := e.state(after); s.Fresh {
		return s
	}
	if e.refresh == idle && !now.Before(e.retryAt) {
		// A refresh queued now begins at or after now ≥ after, so its
		// listing is fresh for this request.
		e.refresh, e.since, e.headers = queued, now, req.Headers
		r.queue.push(e)
		r.dispatch()
	}
	if e.refresh != idle && req.Waiter != (Waiter{}) {
		// A refresh running since before after ends with a listing not
		// fresh for this waiter: woken, it asks again and queues one.
		if e.waiters == nil {
			e.waiters = map[Waiter]struct{}{}
		}
		if len(e.waiters) < r.o.MaxWaiters {
			e.waiters[req.Waiter] = struct{}{}
		}
	}
	return e.state(after)
}

// Peek returns what is known of the server key without asking for a
// refresh (a caller about to stop, or one that only reports).
func (r *Refresher[T]) Peek(key string) (Known[T], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok {
		return Known[T]{}, false
	}
	return e.state(time.Time{}), true
}

// Stats returns the counters.
func (r *Refresher[T]) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.InFlight, s.Queued, s.Entries, s.Bytes = r.inFlight, r.queue.len(), len(r.entries), r.bytes
	return s
}

// Start runs refreshes until ctx ends; then the queued ones are dropped
// and the running ones cancelled, and Start returns once they have.
func (r *Refresher[T]) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.dispatch()
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	r.ctx = nil
	for _, e := range r.queue.drain() {
		e.refresh, e.headers, e.waiters = idle, nil, nil
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

// NeedLeaderElection is false: the Refresher is idle unless a controller
// asks, and it must run before the controllers start asking.
func (r *Refresher[T]) NeedLeaderElection() bool { return false }

// dispatch starts queued refreshes while slots are free. Caller holds mu.
func (r *Refresher[T]) dispatch() {
	if r.ctx == nil {
		return
	}
	for r.inFlight < r.o.Concurrency {
		e := r.queue.pop(func(tenant string) bool { return r.byTenant[tenant] < r.o.PerTenant })
		if e == nil {
			return
		}
		e.refresh, e.since = running, r.clock.Now()
		headers := e.headers
		e.headers = nil
		r.inFlight++
		r.byTenant[e.tenant]++
		r.stats.Fetches++
		r.stats.MaxInFlight = max(r.stats.MaxInFlight, r.inFlight)
		r.wg.Add(1)
		go r.run(context.WithValue(r.ctx, tenantKey{}, e.tenant), e, headers)
	}
}

// run lists e's server once and files the outcome.
func (r *Refresher[T]) run(ctx context.Context, e *entry[T], headers map[string]string) {
	defer r.wg.Done()
	tctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	l, err := r.fetch(tctx, e.url, headers)
	timedOut := errors.Is(tctx.Err(), context.DeadlineExceeded)
	cancel()
	var size int64
	switch {
	case err != nil && timedOut:
		// The SDK's error for this is a chain of wrapped requests; what
		// matters to the person reading the run is that nothing answered.
		err = fmt.Errorf("tools/list of %s: no answer within %s: %w", e.url, r.o.Timeout, context.DeadlineExceeded)
	case err == nil:
		if l != nil {
			size = r.size(l)
		}
		if size > r.o.MaxListingBytes {
			l, err = nil, fmt.Errorf("tools/list of %s: %d bytes of names, descriptions and schemas, more than the %d one server's listing may take",
				e.url, size, r.o.MaxListingBytes)
		}
	}

	r.mu.Lock()
	now := r.clock.Now()
	r.inFlight--
	if r.byTenant[e.tenant]--; r.byTenant[e.tenant] <= 0 {
		delete(r.byTenant, e.tenant)
	}
	stopping := ctx.Err() != nil
	started := e.since
	e.refresh, e.since = idle, time.Time{}
	waiters := e.waiters
	e.waiters = nil
	if !stopping {
		if err == nil {
			if r.entries[e.key] == e {
				r.setSize(e, size)
			} else {
				e.size = size // not in the cache (nothing removes a busy entry): counted nowhere
			}
			e.listing, e.fetchedAt = l, started
			e.err, e.failures, e.retryAt = nil, 0, time.Time{}
		} else {
			r.stats.Failures++
			e.err, e.failures = err, e.failures+1
			e.retryAt = now.Add(r.backoff(e.failures))
		}
		if _, ok := r.entries[e.key]; ok {
			// What was just read is what its waiters read next: the
			// last to be evicted.
			r.lru.MoveToFront(e.elem)
		}
		r.makeRoom(0, e.tenant, e)
		r.dispatch()
	}
	wake := r.wake
	r.mu.Unlock()
	if wake != nil && len(waiters) > 0 && !stopping {
		out := make([]Waiter, 0, len(waiters))
		for w := range waiters {
			out = append(out, w)
		}
		wake(out)
	}
}

// backoff is the wait after the n-th failure in a row.
func (r *Refresher[T]) backoff(n int) time.Duration {
	d := r.o.BackoffBase
	for i := 1; i < n && d < r.o.BackoffCap; i++ {
		d *= 2
	}
	return min(d, r.o.BackoffCap)
}

type tenantKey struct{}

// TenantOf is the tenant whose request a Fetch serves ("" when none).
func TenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}
