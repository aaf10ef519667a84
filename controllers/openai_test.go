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
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// chatServer speaks the OpenAI chat-completions wire format over real HTTP:
// asked by the user, it calls the refund tool; given the tool's result, it
// answers with text. It records every request it receives.
type chatServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []chatRequest
	// gate, when set, holds every answer until it is closed (or the client goes away).
	gate chan struct{}
}

type chatRequest struct {
	Auth   string
	Header http.Header
	Body   struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
}

func newChatServer(t *testing.T) *chatServer { return startChatServer(t, httptest.NewServer) }

// startChatServer is newChatServer over start (httptest.NewTLSServer for
// an endpoint behind a private CA).
func startChatServer(t *testing.T, start func(http.Handler) *httptest.Server) *chatServer {
	cs := &chatServer{}
	cs.srv = start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req chatRequest
		req.Auth = r.Header.Get("Authorization")
		req.Header = r.Header.Clone()
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cs.mu.Lock()
		cs.log = append(cs.log, req)
		gate := cs.gate
		cs.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		msg := map[string]any{"role": "assistant", "content": nil}
		finish := "tool_calls"
		last := req.Body.Messages[len(req.Body.Messages)-1]
		if last.Role == "tool" && last.ToolCallID == "call_abc" {
			msg["content"] = fmt.Sprintf("refund done: %v", last.Content)
			finish = "stop"
		} else {
			msg["tool_calls"] = []any{map[string]any{
				"id": "call_abc", "type": "function",
				"function": map[string]any{"name": "refund", "arguments": `{"amount":7}`},
			}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": req.Body.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
		})
	}))
	t.Cleanup(cs.srv.Close)
	return cs
}

func (cs *chatServer) requests() []chatRequest {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]chatRequest(nil), cs.log...)
}

// TestOpenAIToolLoopWithApproval runs the OpenAI provider (official SDK)
// through a full tool-calling loop with a human approval in the middle.
func TestOpenAIToolLoopWithApproval(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte(`{"refunded":7}`)) }
	cs := newChatServer(t)
	h.startManager(controllers.Options{})
	if err := h.c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "openai", Namespace: h.ns},
		StringData: map[string]string{"apiKey": "sk-test"},
	}); err != nil {
		t.Fatal(err)
	}
	h.createAgent("llm", exagentv1.AgentSpec{
		Instructions: "You refund customers.",
		Model: exagentv1.ModelSpec{
			Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: cs.srv.URL + "/v1",
			APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "openai", Key: "apiKey"},
		},
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
		Policy: fixture.AskPolicy("refund"),
	})
	h.createRun("r", "llm")

	paused := h.waitPhase("r", exagentv1.PhaseAwaitingApproval)
	if got := paused.Status.Calls[0].ID; got != "call_abc" {
		t.Errorf("call id = %q, want the model's call_abc", got)
	}
	h.approve(paused, "ok")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)

	if want := `refund done: {"refunded":7}`; done.Status.Output != want {
		t.Errorf("output = %q, want %q", done.Status.Output, want)
	}
	wantJournal := []toolRequest{{Path: "/refund", Key: string(done.UID) + "/call_abc", Run: h.ns + "/r", Call: "call_abc", Body: `{"amount":7}`}}
	if diff := cmp.Diff(wantJournal, ts.journal()); diff != "" {
		t.Errorf("tool journal (-want +got):\n%s", diff)
	}
	reqs := cs.requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Auth != "Bearer sk-test" {
			t.Errorf("request %d Authorization = %q", i, r.Auth)
		}
		if len(r.Body.Tools) != 1 || r.Body.Tools[0].Type != "function" || r.Body.Tools[0].Function.Name != "refund" ||
			r.Body.Tools[0].Function.Parameters["type"] != "object" {
			t.Errorf("request %d tools = %+v, want the refund function with its schema", i, r.Body.Tools)
		}
	}
	roles := []string{}
	for _, m := range reqs[1].Body.Messages {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"system", "user", "assistant", "tool"}, roles); diff != "" {
		t.Errorf("second request's messages (-want +got):\n%s", diff)
	}
	l := done.Status.Ledger
	if l.Requests != 2 || l.PromptTokens != 22 || l.CompletionTokens != 6 {
		t.Errorf("ledger = requests %d, prompt %d, completion %d; want 2, 22, 6", l.Requests, l.PromptTokens, l.CompletionTokens)
	}
	if !strings.HasPrefix(done.Status.History[0].Content, "You refund") {
		t.Errorf("system prompt = %q", done.Status.History[0].Content)
	}
}

// TestOpenAIModelErrors: a model endpoint that keeps refusing (here 401)
// ends the run Failed with ModelError after the engine's bounded re-sends,
// each charged, with no tool call made.
func TestOpenAIModelErrors(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"bad key","type":"invalid_request_error"}}`))
	}))
	t.Cleanup(srv.Close)
	h.startManager(controllers.Options{})
	h.createAgent("llm", exagentv1.AgentSpec{
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: srv.URL + "/v1"},
	})
	h.createRun("r", "llm")
	run := h.waitPhase("r", exagentv1.PhaseFailed)
	if run.Status.Reason != exagentv1.ReasonModelError || !strings.Contains(run.Status.Message, "401") {
		t.Errorf("reason %s message %q, want ModelError naming the 401", run.Status.Reason, run.Status.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(calls) != run.Status.Ledger.Requests || calls < 2 {
		t.Errorf("endpoint saw %d requests, ledger charged %d; want equal and re-sent at least once", calls, run.Status.Ledger.Requests)
	}
}
