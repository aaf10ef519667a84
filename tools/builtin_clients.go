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

package tools

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// The bounds of the per-identity client cache. Identities are run
// ServiceAccounts, one per namespace and name an Agent author picks, so
// the cache is an LRU: past DefaultBuiltinClients the least recently used
// is dropped, and one unused for BuiltinClientIdle is dropped at the next
// call. Dropping one is always safe: a call holding it finishes with it,
// and the next call builds another (client-go shares the transport, so a
// client is cheap to make; the cache only spares that work per call).
const (
	DefaultBuiltinClients = 256
	BuiltinClientIdle     = 10 * time.Minute
)

// The bounds of what one builtin call reads (docs/tools.md).
const (
	// DefaultBuiltinMaxListItems is the most names a List returns; past
	// it the call fails, asking for a labelSelector.
	DefaultBuiltinMaxListItems = 1000
	// DefaultBuiltinListPageSize is the Limit of each page a List asks
	// for: a List holds one page of object metadata at a time.
	DefaultBuiltinListPageSize = 100
	// DefaultBuiltinMaxResponseBytes bounds every apiserver answer a
	// builtin reads (an object of etcd is at most ~1.5 MiB; an aggregated
	// API may answer anything).
	DefaultBuiltinMaxResponseBytes = 8 << 20
)

// identityClients are the clients of one impersonated identity: dynamic
// for objects, metadata for List (names only, so only metadata is read).
type identityClients struct {
	dynamic  dynamic.Interface
	metadata metadata.Interface
	used     time.Time
}

// clientsFor returns the clients impersonating namespace/sa, from the
// cache or built.
func (b *Builtins) clientsFor(namespace, sa string) (*identityClients, error) {
	user := "system:serviceaccount:" + namespace + ":" + sa
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropIdle(now)
	if c, ok := b.clients.Get(user); ok {
		c.used = now
		return c, nil
	}
	cfg := rest.CopyConfig(b.base)
	// Only the user: for a ServiceAccount username the apiserver adds the
	// groups a real token carries, and the operator needs no right to
	// impersonate groups (which would let it claim any group).
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	limit := b.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultBuiltinMaxResponseBytes
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return limitBody{next: noWriteRetry{next: rt}, max: int64(limit)}
	})
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", user, err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", user, err)
	}
	c := &identityClients{dynamic: dc, metadata: mc, used: now}
	b.clients.Add(user, c) // past the bound, the least recently used goes
	return c, nil
}

// dropIdle removes the clients unused for BuiltinClientIdle, oldest first.
// Called with b.mu held.
func (b *Builtins) dropIdle(now time.Time) {
	for {
		_, c, ok := b.clients.GetOldest()
		if !ok || now.Sub(c.used) < BuiltinClientIdle {
			return
		}
		b.clients.RemoveOldest()
	}
}

func newClientCache(size int) *simplelru.LRU[string, *identityClients] {
	c, err := simplelru.NewLRU[string, *identityClients](size, nil)
	if err != nil {
		panic(fmt.Sprintf("tools: %v", err)) // size <= 0: a programming error
	}
	return c
}

// ErrResponseTooLarge is the cause of a builtin call whose apiserver
// answer was longer than Builtins.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("the apiserver's answer is too large")

// limitBody bounds every response body a builtin reads: past max bytes the
// read fails with ErrResponseTooLarge instead of growing the manager's heap
// with whatever the apiserver (or an aggregated API behind it) sends.
type limitBody struct {
	next http.RoundTripper
	max  int64
}

func (l limitBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: l.max, max: l.max}
	return resp, nil
}

type limitedBody struct {
	rc        io.ReadCloser
	left, max int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: the answer is too large only if there is more.
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
