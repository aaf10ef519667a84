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

package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PagingShape is where a Paging server puts the bulk of each page's tool.
type PagingShape int

const (
	// PagingDescription: one string, the tool's description.
	PagingDescription PagingShape = iota
	// PagingSchema: the tool's input schema, as many tiny properties
	// (`"1f":{}`): what costs a client the most memory to decode per byte.
	PagingSchema
)

// Paging is a hostile MCP server whose tools/list never ends: every page
// is one tool of about PageBytes (by default just under the 8 MiB a client
// reads of one answer) and a nextCursor to the next page. The handshake is
// the SDK's own server; the pages are written as they go, from a small
// buffer, so a thousand of them cost the server no memory. It counts what
// it served: the pages, the most of them one listing reached (its cursor
// counts them), and the bytes written.
type Paging struct {
	URL       string
	PageBytes int
	Shape     PagingShape

	mu      sync.Mutex
	pages   int
	deepest int
	lists   int
	written int64
	http    *httptest.Server
}

// DefaultPageBytes is a page just under the 8 MiB bound on one answer
// (tools.MaxMCPAnswerBytes): each page passes that bound on its own.
const DefaultPageBytes = 8<<20 - 4<<10

// StartPaging runs a Paging server on 127.0.0.1 until Close (pageBytes 0:
// DefaultPageBytes). Any path serves it, so /a and /b are two servers to a
// client that keys its listings by URL.
func StartPaging(pageBytes int, shape PagingShape) *Paging {
	if pageBytes <= 0 {
		pageBytes = DefaultPageBytes
	}
	p := &Paging{PageBytes: pageBytes, Shape: shape}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcptest-paging", Version: "v0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "page-0", InputSchema: objectSchema()}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("never called"), nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	p.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if r.Method == http.MethodPost && json.Unmarshal(body, &req) == nil && req.Method == "tools/list" && len(req.ID) > 0 {
			p.page(w, r, req.ID, req.Params.Cursor)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sdk.ServeHTTP(w, r)
	}))
	p.URL = p.http.URL + "/mcp"
	return p
}

// page writes one page: page n of a listing (cursor "" is page 0), its
// tool named page-n, and the cursor of page n+1.
func (p *Paging) page(w http.ResponseWriter, r *http.Request, id json.RawMessage, cursor string) {
	n, _ := strconv.Atoi(cursor)
	p.mu.Lock()
	p.pages++
	p.deepest = max(p.deepest, n+1)
	if n == 0 {
		p.lists++
	}
	p.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	cw := &countingWriter{w: w}
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"nextCursor":"%d","tools":[{"name":"page-%d",`, id, n+1, n)
	var tail string
	switch p.Shape {
	case PagingSchema:
		head += `"description":"a page","inputSchema":{"type":"object","properties":{`
		tail = `}}}]}}`
	default:
		head += `"inputSchema":{"type":"object"},"description":"`
		tail = `"}]}}`
	}
	_, _ = io.WriteString(cw, head)
	fill := p.PageBytes - len(head) - len(tail)
	buf := make([]byte, 0, len(filler))
	for k := 0; fill > 0; {
		chunk := filler[:min(len(filler), fill)]
		if p.Shape == PagingSchema {
			buf = buf[:0]
			for ; len(buf) < cap(buf)-32 && len(buf) < fill; k++ {
				if k > 0 {
					buf = append(buf, ',')
				}
				buf = fmt.Appendf(buf, `"%x":{}`, k)
			}
			chunk = buf
		}
		fill -= len(chunk)
		if _, err := cw.Write(chunk); err != nil {
			break // the client hung up
		}
	}
	_, _ = io.WriteString(cw, tail)
	p.mu.Lock()
	p.written += cw.n
	p.mu.Unlock()
}

var filler = bytes.Repeat([]byte("A"), 64<<10)

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// Served is what the server served: pages in all, the most pages one
// listing reached, listings begun (page 0 asked), and the bytes it wrote
// (what the client read, and what the sockets' buffers held when it hung up).
func (p *Paging) Served() (pages, deepest, lists int, written int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pages, p.deepest, p.lists, p.written
}

// Close stops the server.
func (p *Paging) Close() {
	p.http.CloseClientConnections()
	p.http.Close()
}
