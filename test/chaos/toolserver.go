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
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Headers the http tool sends (docs/architecture.md §2).
const (
	headerKey  = "Idempotency-Key"
	headerRun  = "X-Exagent-Run"
	headerCall = "X-Exagent-Call"
)

// ToolServer is a real HTTP tool endpoint on 127.0.0.1 that journals every
// request: arrival time, Idempotency-Key, X-Exagent-Run, X-Exagent-Call,
// and the run's resourceVersion read while the request is held (the
// history check's bound on what was committed before it arrived).
//
// A path marked idempotent applies its effect once per key, as a real
// idempotent API would (a re-send gets the stored answer); every other
// request applies an effect, so two requests with one key are a duplicate.
type ToolServer struct {
	recordingServer

	// seen and idempotent are guarded by recordingServer.mu.
	seen       map[string]bool
	idempotent map[string]bool
}

// NewToolServer listens on 127.0.0.1; reader reads runs straight from the
// apiserver (no cache: a quorum read).
func NewToolServer(reader client.Reader) (*ToolServer, error) {
	ts := &ToolServer{seen: map[string]bool{}, idempotent: map[string]bool{}}
	if err := ts.listen("tool server", "", reader, ts.serve); err != nil {
		return nil, err
	}
	return ts, nil
}

// Idempotent marks path as an idempotent endpoint.
func (ts *ToolServer) Idempotent(path string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.idempotent[path] = true
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

	applied := func(q *Request) {
		q.Idempotent = ts.idempotent[r.URL.Path]
		q.Applied = !q.Idempotent || !ts.seen[key]
		ts.seen[key] = true
	}
	if !ts.record(r.Context(), req, applied) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "key": key, "bytes": len(body)})
}
