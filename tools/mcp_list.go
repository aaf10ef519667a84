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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/loop"
)

// DefaultMCPListTTL is how long a server's tools/list is reused by a run
// already running before it is refreshed (in the background: the run goes
// on with the listing it has). A claim needs a listing read after the run
// became startable (MCPNeed.After).
const DefaultMCPListTTL = 30 * time.Second

// DefaultMCPListTimeout bounds one tools/list (connect and every page).
const DefaultMCPListTimeout = mcplist.DefaultTimeout

// maxMCPListTools bounds a listing: beyond it a server's inventory would
// not fit a run's model request anyway.
const maxMCPListTools = 512

// maxMCPListValues bounds the JSON structure of a listing's answers, all
// pages together, counted as they are read (listingBudget): what a listing
// costs the manager while it is decoded grows with its values more than
// with its bytes — 4 MiB of tiny schema properties decode to ~35 MiB, and
// the SDK decodes a page's schemas more than once — so the bytes' bound
// alone let a tenant's few listings in flight hold hundreds of MiB (641 MiB
// peak for eight: TestMCPPagingServerManagerMemory). 256Ki marks (each
// '{', '[', ':' and ',' outside a string) is some 2 MiB of dense schemas,
// far more than 512 ordinary tools have, and decodes to at most ~10–16 MiB.
const maxMCPListValues = 256 << 10

// MCPCatalog is the manager's knowledge of MCP servers' tools/list, per
// server URL and credentials (a different token may see different tools).
// Reads never do network IO: the listings are fetched by a bounded
// refresher beside the reconcile workers (internal/mcplist: one listing in
// flight per server, a global and a per-tenant bound, a timeout, backoff
// per failing server, a cache of bounded entries and bytes in which each
// namespace has a bounded number of servers); each listing is bounded
// while it is read (fetch). It is a manager.Runnable (Start), and safe for
// concurrent use.
type MCPCatalog struct {
	Client *http.Client
	// Clock is the clock of the listings' fetch times: the clock the
	// callers' MCPNeed.After comes from (the real clock when nil).
	Clock clock.PassiveClock
	// Options bound the refresher (mcplist defaults when zero).
	Options mcplist.Options

	once sync.Once
	r    *mcplist.Refresher[loop.MCPListing]

	mu    sync.Mutex
	wakes map[string]func([]types.NamespacedName)
}

// Kinds of the waiters a listing wakes (MCPNeed.Waiter.Kind): the run
// controller waits on listings to claim a run, the Agent controller to
// say whether an Agent's mcp tools work.
const (
	WaiterRun   = "AgentRun"
	WaiterAgent = "Agent"
)

func (c *MCPCatalog) refresher() *mcplist.Refresher[loop.MCPListing] {
	c.once.Do(func() {
		c.r = mcplist.New(c.fetch, mcpListingBytes, c.Clock, c.Options)
		c.r.SetWake(c.wake)
	})
	return c.r
}

// Start runs the refresher until ctx ends (manager.Runnable).
func (c *MCPCatalog) Start(ctx context.Context) error { return c.refresher().Start(ctx) }

// NeedLeaderElection is false: the refresher is idle unless asked.
func (c *MCPCatalog) NeedLeaderElection() bool { return false }

// SetWake sets what is called with the waiters of kind (WaiterRun,
// WaiterAgent) once a refresh they waited for ended (see
// mcplist.Refresher.SetWake: it must not block for long).
func (c *MCPCatalog) SetWake(kind string, wake func([]types.NamespacedName)) {
	c.refresher()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wakes == nil {
		c.wakes = map[string]func([]types.NamespacedName){}
	}
	c.wakes[kind] = wake
}

// wake hands each kind's waiters to its wake function; waiters of a kind
// nobody set are dropped (their own requeue brings them back).
func (c *MCPCatalog) wake(ws []mcplist.Waiter) {
	byKind := map[string][]types.NamespacedName{}
	for _, w := range ws {
		byKind[w.Kind] = append(byKind[w.Kind], w.NamespacedName)
	}
	c.mu.Lock()
	fns := make(map[string]func([]types.NamespacedName), len(byKind))
	for k := range byKind {
		fns[k] = c.wakes[k]
	}
	c.mu.Unlock()
	for k, keys := range byKind {
		if fn := fns[k]; fn != nil {
			fn(keys)
		}
	}
}

// Stats are the refresher's counters.
func (c *MCPCatalog) Stats() mcplist.Stats { return c.refresher().Stats() }

// Bounds are the refresher's options, defaults filled (the defaults when
// c is nil: no catalog configured).
func (c *MCPCatalog) Bounds() mcplist.Options {
	if c == nil {
		return mcplist.Options{}.WithDefaults()
	}
	return c.refresher().Options()
}

// get returns what is known of the server, asking for a refresh when it
// is not fresh for need (never waiting for it); with need.Cached, only
// what is known.
func (c *MCPCatalog) get(namespace, url string, headers map[string]string, need MCPNeed) mcplist.Known[loop.MCPListing] {
	// The namespace is part of the key: a listing is dialled under its
	// namespace's egress policy (which an allow-list may widen), so one
	// fetched for a namespace is never served to another.
	key := namespace + "\x00" + cacheKey(url, headers)
	if need.Cached {
		st, _ := c.refresher().Peek(key)
		return st
	}
	return c.refresher().Get(mcplist.Request{Key: key, URL: url, Headers: headers, Tenant: namespace,
		After: need.After, Waiter: need.Waiter})
}

// fetch lists the server once; the refresher bounds it with its timeout.
// The listing is bounded while it is read, not once it is whole: every
// answer of its session (initialize, each tools/list page) counts against
// one budget (listingBudget) of mcplist.Options.MaxListingBytes and
// maxMCPListValues, and the first byte past either ends the listing (the
// connection closed, the session's context cancelled); what it keeps is
// counted tool by tool against the same bytes. A server that pages 8 MiB
// tools costs one listing 4 MiB read, not 512 pages of them.
func (c *MCPCatalog) fetch(ctx context.Context, url string, headers map[string]string) (*loop.MCPListing, error) {
	ctx = egress.WithNamespace(ctx, mcplist.TenantOf(ctx))
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	limit := c.Bounds().MaxListingBytes
	budget := newListingBudget(limit, maxMCPListValues, stop)
	rt := &mcpTransport{base: transportOf(c.Client), headers: headers, listing: budget}
	session, err := connectMCP(ctx, url, c.Client, rt)
	if err != nil {
		if tl := budget.tripped(); tl != nil {
			return nil, fmt.Errorf("tools/list of %s: %w (in its initialize answer)", url, tl)
		}
		return nil, fmt.Errorf("connecting to the MCP server %s: %w", url, err)
	}
	defer func() { _ = session.Close() }()
	out := &loop.MCPListing{Tools: []loop.MCPToolInfo{}}
	kept := mcpListingOverhead
	for t, err := range session.Tools(ctx, nil) {
		if tl := budget.tripped(); tl != nil {
			return nil, fmt.Errorf("tools/list of %s: %w (%d tools read)", url, tl, len(out.Tools))
		}
		if err != nil {
			return nil, fmt.Errorf("tools/list of %s: %w", url, err)
		}
		if len(out.Tools) == maxMCPListTools {
			return nil, fmt.Errorf("tools/list of %s: more than %d tools", url, maxMCPListTools)
		}
		info, err := toolInfo(t)
		if err != nil {
			return nil, fmt.Errorf("tools/list of %s: tool %q: %w", url, t.Name, err)
		}
		if kept += mcpToolBytes(&info); kept > limit {
			return nil, fmt.Errorf("tools/list of %s: more than the %s one server's listing may take in names, descriptions and schemas "+
				"(%d tools read): exagent read no more of it", url, bounded.Size(limit), len(out.Tools)+1)
		}
		out.Tools = append(out.Tools, info)
	}
	slices.SortFunc(out.Tools, func(a, b loop.MCPToolInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

func toolInfo(t *mcp.Tool) (loop.MCPToolInfo, error) {
	info := loop.MCPToolInfo{Name: t.Name, Description: t.Description}
	if t.InputSchema != nil {
		data, err := json.Marshal(t.InputSchema)
		if err != nil {
			return info, fmt.Errorf("input schema: %w", err)
		}
		info.InputSchema = data
	}
	if a := t.Annotations; a != nil {
		ro, idem := a.ReadOnlyHint, a.IdempotentHint
		info.Annotations = &loop.MCPAnnotations{Title: a.Title, ReadOnlyHint: &ro, DestructiveHint: a.DestructiveHint,
			IdempotentHint: &idem, OpenWorldHint: a.OpenWorldHint}
	}
	return info, nil
}

// cacheKey identifies a server and the credentials it is asked with; the
// values are hashed so that the cache holds no secret.
func cacheKey(url string, headers map[string]string) string {
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, k := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", k, headers[k])
	}
	return url + "\x00" + hex.EncodeToString(h.Sum(nil))
}
