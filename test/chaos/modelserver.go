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
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunInputPrefix starts the input of every run of the suite, so the model
// server knows which run a request is for: "chaos run NAMESPACE/NAME".
const RunInputPrefix = "chaos run "

// ToolCall is one call a model turn asks for.
type ToolCall struct {
	ID, Name string
	Args     map[string]any
}

// Turn is the model's answer at one step: tool calls, or a text.
type Turn struct {
	Calls []ToolCall
	Text  string
}

// ModelServer speaks the OpenAI chat-completions wire format over real
// HTTP on 127.0.0.1. The script says what it answers to a run at a step;
// the step is the number of assistant messages in the request. Every
// request is journaled with the run's resourceVersion read while the
// request is held.
type ModelServer struct {
	URL string

	srv    *http.Server
	reader client.Reader
	script func(run types.NamespacedName, step int32) Turn

	mu      sync.Mutex
	journal []Request
	hold    func(r Request) bool
	held    chan Request
	release chan struct{}
	latency time.Duration
}

// NewModelServer listens on 127.0.0.1 and answers with script.
func NewModelServer(reader client.Reader, script func(run types.NamespacedName, step int32) Turn) (*ModelServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model server: %w", err)
	}
	ms := &ModelServer{URL: "http://" + l.Addr().String() + "/v1", reader: reader, script: script,
		held: make(chan Request, 1024), release: make(chan struct{})}
	ms.srv = &http.Server{Handler: http.HandlerFunc(ms.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ms.srv.Serve(l) }()
	return ms, nil
}

// HoldWhen holds every request for which cond is true (after journaling
// it) until ReleaseAll or the client goes away; held ones go to Held.
func (ms *ModelServer) HoldWhen(cond func(r Request) bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.hold = cond
}

// Held announces each request the server holds.
func (ms *ModelServer) Held() <-chan Request { return ms.held }

// ReleaseAll answers every held request and holds no more.
func (ms *ModelServer) ReleaseAll() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.hold = nil
	select {
	case <-ms.release:
	default:
		close(ms.release)
	}
}

// SetLatency makes every answer take d: a busy endpoint, so that calls
// queue in the manager's executor.
func (ms *ModelServer) SetLatency(d time.Duration) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.latency = d
}

// Close stops the server.
func (ms *ModelServer) Close() {
	ms.ReleaseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ms.srv.Shutdown(ctx)
}

// Journal returns every request received so far.
func (ms *ModelServer) Journal() []Request {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]Request(nil), ms.journal...)
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

func (ms *ModelServer) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var in chatRequest
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Kind: KindModel, Server: "model", At: at}
	for _, m := range in.Messages {
		switch m.Role {
		case "assistant":
			req.Step++
		case "user":
			if s, ok := m.Content.(string); ok && strings.HasPrefix(s, RunInputPrefix) {
				if ns, name, ok := strings.Cut(strings.TrimPrefix(s, RunInputPrefix), "/"); ok {
					req.Run = types.NamespacedName{Namespace: ns, Name: strings.Fields(name)[0]}
				}
			}
		}
	}
	req.StoreRV, req.RunUID = readRV(r.Context(), ms.reader, req.Run)

	ms.mu.Lock()
	ms.journal = append(ms.journal, req)
	hold := ms.hold != nil && ms.hold(req)
	release, latency := ms.release, ms.latency
	ms.mu.Unlock()
	if !pause(r.Context(), latency) {
		return
	}
	if hold {
		ms.held <- req
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}

	turn := ms.script(req.Run, req.Step)
	msg := map[string]any{"role": "assistant", "content": nil}
	finish := "stop"
	if len(turn.Calls) == 0 {
		msg["content"] = turn.Text
	} else {
		finish = "tool_calls"
		var calls []any
		for _, c := range turn.Calls {
			args, _ := json.Marshal(c.Args)
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": string(args)}})
		}
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-chaos", "object": "chat.completion", "created": at.Unix(), "model": in.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
	})
}
