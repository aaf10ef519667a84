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

	"github.com/exagent-io/exagent/loop"
)

// DefaultMCPListTTL is how long a server's tools/list is reused between
// claims. A claim (a run about to start IO) always asks again.
const DefaultMCPListTTL = 30 * time.Second

// DefaultMCPListTimeout bounds one tools/list (connect and every page).
const DefaultMCPListTimeout = 15 * time.Second

// maxMCPListTools bounds a listing: beyond it a server's inventory would
// not fit a run's model request anyway.
const maxMCPListTools = 512

// MCPCatalog reads servers' tools/list and caches each per server URL and
// credentials (a different token may see different tools) for a short
// time. It is safe for concurrent use.
type MCPCatalog struct {
	Client  *http.Client
	Timeout time.Duration
	// Now is the clock of the cache (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]cachedListing
}

type cachedListing struct {
	listing *loop.MCPListing
	at      time.Time
}

func (c *MCPCatalog) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// List returns the server's tools, from the cache when it is younger than
// maxAge (0 always asks the server). When the server cannot be asked, the
// error says why and stale is the last listing read, if any: callers that
// start no IO may use it.
func (c *MCPCatalog) List(ctx context.Context, url string, headers map[string]string, maxAge time.Duration) (l *loop.MCPListing, stale *loop.MCPListing, err error) {
	key := cacheKey(url, headers)
	c.mu.Lock()
	hit, ok := c.cache[key]
	c.mu.Unlock()
	if ok && maxAge > 0 && c.now().Sub(hit.at) < maxAge {
		return hit.listing, nil, nil
	}
	l, err = c.fetch(ctx, url, headers)
	if err != nil {
		return nil, hit.listing, err
	}
	c.mu.Lock()
	if c.cache == nil {
		c.cache = map[string]cachedListing{}
	}
	c.cache[key] = cachedListing{listing: l, at: c.now()}
	c.mu.Unlock()
	return l, nil, nil
}

func (c *MCPCatalog) fetch(ctx context.Context, url string, headers map[string]string) (*loop.MCPListing, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultMCPListTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	session, err := connectMCP(ctx, url, c.Client, &mcpTransport{base: transportOf(c.Client), headers: headers})
	if err != nil {
		return nil, fmt.Errorf("connecting to the MCP server %s: %w", url, err)
	}
	defer func() { _ = session.Close() }()
	out := &loop.MCPListing{Tools: []loop.MCPToolInfo{}}
	for t, err := range session.Tools(ctx, nil) {
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
