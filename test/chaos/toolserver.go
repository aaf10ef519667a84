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

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Headers the http tool sends (docs/architecture.md §2).
const (
	headerKey  = "Idempotency-Key"
	headerRun  = "X-Exagent-Run"
	headerCall = "X-Exagent-Call"
)

// storeRead is how long a server tries to read the run it got a request
// for (the apiserver may be restarting).
const storeRead = 20 * time.Second

// ToolServer is a real HTTP tool endpoint on 127.0.0.1 that journals every
// request: arrival time, Idempotency-Key, X-Exagent-Run, X-Exagent-Call,
// and the run's resourceVersion read while the request is held (the
// history check's bound on what was committed before it arrived).
//
// A path marked idempotent applies its effect once per key, as a real
// idempotent API would (a re-send gets the stored answer); every other
// request applies an effect, so two requests with one key are a duplicate.
type ToolServer struct {
	URL string

	srv    *http.Server
	reader client.Reader

	mu         sync.Mutex
	journal    []Request
	seen       map[string]bool
	idempotent map[string]bool
	hold       func(r Request) bool
	held       chan Request
	release    chan struct{}
	latency    time.Duration
}

// NewToolServer listens on 127.0.0.1; reader reads runs straight from the
// apiserver (no cache: a quorum read).
func NewToolServer(reader client.Reader) (*ToolServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tool server: %w", err)
	}
	ts := &ToolServer{URL: "http://" + l.Addr().String(), reader: reader, seen: map[string]bool{},
		idempotent: map[string]bool{}, held: make(chan Request, 1024), release: make(chan struct{})}
	ts.srv = &http.Server{Handler: http.HandlerFunc(ts.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ts.srv.Serve(l) }()
	return ts, nil
}

// Idempotent marks path as an idempotent endpoint.
func (ts *ToolServer) Idempotent(path string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.idempotent[path] = true
}

// HoldWhen makes the server hold, after applying the effect and journaling
// it, every request for which cond is true, until ReleaseAll or until the
// client goes away (a killed manager): "during IO". Held requests are
// announced on Held.
func (ts *ToolServer) HoldWhen(cond func(r Request) bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.hold = cond
}

// Held announces each request the server holds.
func (ts *ToolServer) Held() <-chan Request { return ts.held }

// ReleaseAll answers every held request and holds no more.
func (ts *ToolServer) ReleaseAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.hold = nil
	select {
	case <-ts.release:
	default:
		close(ts.release)
	}
}

// SetLatency makes every answer take d: a busy endpoint, so that calls
// queue in the manager's executor.
func (ts *ToolServer) SetLatency(d time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.latency = d
}

// Close stops the server.
func (ts *ToolServer) Close() {
	ts.ReleaseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ts.srv.Shutdown(ctx)
}

// Journal returns every request received so far.
func (ts *ToolServer) Journal() []Request {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]Request(nil), ts.journal...)
}

// Applied reports whether an effect of key was applied, and when.
func (ts *ToolServer) Applied(key string) (Request, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, r := range ts.journal {
		if r.Key == key && r.Applied {
			return r, true
		}
	}
	return Request{}, false
}

func (ts *ToolServer) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the request never arrived whole: no effect
	}
	key := r.Header.Get(headerKey)
	req := Request{Kind: KindHTTP, Server: r.URL.Path, CallID: r.Header.Get(headerCall), Key: key, At: at}
	if ns, name, ok := strings.Cut(r.Header.Get(headerRun), "/"); ok {
		req.Run = types.NamespacedName{Namespace: ns, Name: name}
	}
	if uid, _, ok := strings.Cut(key, "/"); ok {
		req.RunUID = types.UID(uid)
	}
	req.StoreRV, _ = readRV(r.Context(), ts.reader, req.Run)

	ts.mu.Lock()
	req.Idempotent = ts.idempotent[r.URL.Path]
	req.Applied = !req.Idempotent || !ts.seen[key]
	ts.seen[key] = true
	ts.journal = append(ts.journal, req)
	hold := ts.hold != nil && ts.hold(req)
	release, latency := ts.release, ts.latency
	ts.mu.Unlock()
	if !pause(r.Context(), latency) {
		return
	}

	if hold {
		ts.held <- req
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "key": key, "bytes": len(body)})
}

// readRV reads the run past any cache and returns its resourceVersion:
// every write the apiserver acknowledged before this read is at or below
// it. It retries while the apiserver is unreachable.
func readRV(ctx context.Context, reader client.Reader, key types.NamespacedName) (int64, types.UID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeRead)
	defer cancel()
	for {
		run := &exagentv1.AgentRun{}
		err := reader.Get(ctx, key, run)
		if err == nil {
			rv, _ := strconv.ParseInt(run.ResourceVersion, 10, 64)
			return rv, run.UID
		}
		select {
		case <-ctx.Done():
			return 0, ""
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pause lets d pass unless ctx ends first (false).
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
