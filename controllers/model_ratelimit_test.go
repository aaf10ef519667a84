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

package controllers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// rateLimited is the Ready=False ModelRateLimited condition of a run that
// still holds its claim, whose message contains want.
func rateLimited(want string) func(*exagentv1.AgentRun) bool {
	return func(r *exagentv1.AgentRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, exagentv1.ConditionReady)
		return c != nil && c.Reason == exagentv1.ReasonModelRateLimited && strings.Contains(c.Message, want) &&
			r.Status.Phase == exagentv1.PhaseRunning && r.Status.Claim != nil
	}
}

// TestModelRateLimits: a provider's 429 is waited out while the run keeps
// its claim — never Failed, the condition saying until when — and an
// Agent's model.rateLimit is shared by its runs: a run waiting for it
// sends nothing until the other's request is answered.
func TestModelRateLimits(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})

	t.Run("a 429 with Retry-After past the SDK's retries: the run waits, keeps its claim, then succeeds", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		var open atomic.Bool
		var mu sync.Mutex
		limited, answered := 0, 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if !open.Load() {
				limited++
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
				return
			}
			answered++
			_ = json.NewEncoder(w).Encode(map[string]any{
				"id": "x", "object": "chat.completion", "created": 1, "model": "m",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "done"}}},
				"usage":   map[string]any{"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
			})
		}))
		t.Cleanup(srv.Close)
		h.createAgent("limited", exagentv1.AgentSpec{Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: srv.URL + "/v1"}})
		h.createRun("limited", "limited")
		waiting := h.waitRun("limited", "Ready=False ModelRateLimited, claimed", rateLimited("waiting for the model provider (rate limited until"))
		open.Store(true)
		done := h.waitPhase("limited", exagentv1.PhaseSucceeded)
		if done.Status.Attempts != waiting.Status.Attempts {
			t.Errorf("attempts %d → %d: the run lost its claim while it waited", waiting.Status.Attempts, done.Status.Attempts)
		}
		if done.Status.Ledger.Requests != 1 || done.Status.Output != "done" {
			t.Errorf("ledger requests %d output %q, want 1 request (a refused try is not billed) and the answer", done.Status.Ledger.Requests, done.Status.Output)
		}
		mu.Lock()
		defer mu.Unlock()
		if limited < 4 || answered != 1 {
			t.Errorf("the endpoint refused %d and answered %d tries; want at least the SDK's 4 before the run waited, then 1 after it", limited, answered)
		}
		if c := meta.FindStatusCondition(done.Status.Conditions, exagentv1.ConditionReady); c == nil || c.Reason == exagentv1.ReasonModelRateLimited {
			t.Errorf("Ready after the answer = %+v, want the journal's view again", c)
		}
	})

	t.Run("model.rateLimit maxConcurrent 1 is shared by two runs of one Agent", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		ts := newToolServer(t)
		ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte(`{"refunded":7}`)) }
		cs := newChatServer(t)
		gate := make(chan struct{})
		cs.mu.Lock()
		cs.gate = gate
		cs.mu.Unlock()
		h.createAgent("shared", exagentv1.AgentSpec{
			Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: cs.srv.URL + "/v1",
				RateLimit: &exagentv1.ModelRateLimit{MaxConcurrent: new(int32(1))}},
			Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
			Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		})
		h.createRun("one", "shared")
		h.createRun("two", "shared")
		// One of them is in flight (held at the gate), the other waits
		// for the Agent's limit without sending anything.
		var waiter string
		if !eventually(func() bool {
			for _, name := range []string{"one", "two"} {
				var r exagentv1.AgentRun
				if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &r); err == nil && rateLimited("maxConcurrent 1 requests in flight")(&r) {
					waiter = name
					return true
				}
			}
			return false
		}) {
			t.Fatal("neither run says it waits for the Agent's maxConcurrent")
		}
		if n := len(cs.requests()); n != 1 {
			t.Errorf("the endpoint saw %d requests while one was held, want 1 (%s waits in admission)", n, waiter)
		}
		close(gate)
		for _, name := range []string{"one", "two"} {
			if r := h.waitPhase(name, exagentv1.PhaseSucceeded); r.Status.Ledger.Requests != 2 {
				t.Errorf("%s: %d model requests, want 2", name, r.Status.Ledger.Requests)
			}
		}
		if n := len(cs.requests()); n != 4 {
			t.Errorf("the endpoint saw %d requests, want 4", n)
		}
	})
}
