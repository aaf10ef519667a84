//go:build scale

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

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// runInputPrefix starts every run's input: "scale run NAMESPACE/NAME", so
// the model server knows which run a request is for (test/chaos's
// convention).
const runInputPrefix = "scale run "

// The kinds of run, by the prefix of their names.
const (
	prefixEnded   = "ended-"
	prefixWaiting = "wait-"
	prefixLive    = "live-"
)

// The Agent's tools: charge asks a person (a policy rule) and is not
// idempotent, so a second effect of one approved call is a duplicate the
// tool server sees; journal is allowed and idempotent, the step of every
// running run.
const (
	toolCharge  = "charge"
	toolJournal = "journal"
)

// slowModel speaks the OpenAI chat-completions wire format over real HTTP
// on 127.0.0.1, as test/chaos's ModelServer does, but keeps per run only
// the arrival times of its requests, not their messages: a running run
// sends its whole transcript at every step, and 1,000 of them over half
// an hour would be gigabytes of journal. It answers an ended run with a
// final text at once; a waiting run with a charge call, then (after the
// approval and the tool's answer) a final text; a running run, after
// between min and max (a stable pseudo-random time per run and step),
// with a journal call for its step — forever.
type slowModel struct {
	URL      string
	min, max time.Duration
	srv      *http.Server

	requests, liveRequests atomic.Int64

	mu sync.Mutex
	// arrivals of each running run's requests, and the ones in flight.
	arrivals map[string][]time.Time
	inflight map[string]int
}

func newSlowModel(min, max time.Duration) (*slowModel, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model server: %w", err)
	}
	m := &slowModel{URL: "http://" + l.Addr().String() + "/v1", min: min, max: max,
		arrivals: map[string][]time.Time{}, inflight: map[string]int{}}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(l) }()
	return m, nil
}

func (m *slowModel) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

func (m *slowModel) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var in chatRequest
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.requests.Add(1)
	// The run is named by its input; its step is the number of assistant
	// messages after it.
	run, step := "", 0
	for _, msg := range in.Messages {
		switch msg.Role {
		case "assistant":
			step++
		case "user":
			if text, _ := msg.Content.(string); strings.HasPrefix(text, runInputPrefix) {
				run, step = strings.Fields(strings.TrimPrefix(text, runInputPrefix))[0], 0
			}
		}
	}
	_, name, _ := strings.Cut(run, "/")
	msg := map[string]any{"role": "assistant", "content": "done"}
	switch {
	case strings.HasPrefix(name, prefixWaiting) && step == 0:
		msg = toolCallMessage(toolCharge, "c0", map[string]any{"amount": 1})
	case strings.HasPrefix(name, prefixLive):
		m.liveRequests.Add(1)
		m.mu.Lock()
		m.arrivals[run] = append(m.arrivals[run], at)
		m.inflight[run]++
		m.mu.Unlock()
		ok := wait(r.Context(), m.delay(run, step))
		m.mu.Lock()
		m.inflight[run]--
		m.mu.Unlock()
		if !ok {
			return // the manager went away (killed): no answer
		}
		msg = toolCallMessage(toolJournal, fmt.Sprintf("s%d", step), map[string]any{"step": step})
	}
	finish := "stop"
	if _, ok := msg["tool_calls"]; ok {
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-scale", "object": "chat.completion", "created": at.Unix(), "model": in.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
	})
}

func toolCallMessage(tool, id string, args map[string]any) map[string]any {
	raw, _ := json.Marshal(args)
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": id, "type": "function", "function": map[string]any{"name": tool, "arguments": string(raw)}}}}
}

// delay is the answer time of run at step: between min and max, stable
// for the pair (a re-sent request takes as long as the first).
func (m *slowModel) delay(run string, step int) time.Duration {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s/%d", run, step)
	frac := float64(h.Sum64()%10000) / 10000
	return m.min + time.Duration(frac*float64(m.max-m.min))
}

// mean is the mean answer time of a running run's request.
func (m *slowModel) mean() time.Duration { return (m.min + m.max) / 2 }

// inFlight is how many requests of runs are being answered now.
func (m *slowModel) inFlight(runs map[string]bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for r := range runs {
		n += m.inflight[r]
	}
	return n
}

// firstAfter is the first arrival of a request of run at or after t (zero
// if none yet).
func (m *slowModel) firstAfter(run string, t time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.arrivals[run]
	for i := len(a) - 1; i >= 0; i-- {
		if a[i].Before(t) {
			if i+1 < len(a) {
				return a[i+1]
			}
			return time.Time{}
		}
	}
	if len(a) > 0 {
		return a[0]
	}
	return time.Time{}
}

// requestsOf is how many requests run has made.
func (m *slowModel) requestsOf(run string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.arrivals[run])
}

// wait lets d pass unless ctx ends first (false).
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
