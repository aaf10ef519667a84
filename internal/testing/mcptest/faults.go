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
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// gate counts a server's HTTP requests and sessions begun (initialize)
// and, while down, answers each 503 before the MCP handler sees it: a
// server that fails, then recovers.
type gate struct {
	down     atomic.Bool
	requests atomic.Int64
	connects atomic.Int64
}

func (g *gate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			g.connects.Add(1)
		}
		if g.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// SetDown makes every request fail with 503 (true) or be served (false).
func (s *Server) SetDown(down bool) { s.gate.down.Store(down) }

// Requests is how many HTTP requests the server received (every MCP
// message, tools/list and tools/call alike, is one or more).
func (s *Server) Requests() int { return int(s.gate.requests.Load()) }

// Connects is how many sessions a client tried to begin (initialize
// requests): one per tools/list and per tools/call.
func (s *Server) Connects() int { return int(s.gate.connects.Load()) }

// Hang is an HTTP server on 127.0.0.1 that accepts every connection and
// request and never answers (until the client gives up or Close): the
// hostile MCP server. It counts the requests it holds.
type Hang struct {
	URL string

	mu      sync.Mutex
	holding int
	most    int
	total   int
	http    *httptest.Server
	stop    chan struct{}
	once    sync.Once
}

// StartHang runs a Hang until Close.
func StartHang() *Hang {
	h := &Hang{stop: make(chan struct{})}
	h.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.total++
		h.holding++
		h.most = max(h.most, h.holding)
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.holding--
			h.mu.Unlock()
		}()
		// Read the request to its end: only then does the server watch
		// the connection, and a client that gives up ends the request.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
	}))
	h.URL = h.http.URL + "/mcp"
	return h
}

// Requests is how many requests the server received; MostAtOnce the most
// it held at once.
func (h *Hang) Requests() (total, mostAtOnce int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total, h.most
}

// Close releases the held requests and stops the server.
func (h *Hang) Close() {
	h.once.Do(func() {
		close(h.stop)
		h.http.CloseClientConnections()
		h.http.Close()
	})
}
