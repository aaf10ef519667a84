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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// turnModel is an OpenAI-compatible server for conversations that records
// every request's messages: asked by a user, it calls refund (a call id
// unique to the turn: the number of user messages); given the tool's
// result, it answers. Each request is charged 11 + 3 tokens.
type turnModel struct {
	srv *httptest.Server
	mu  sync.Mutex
	log [][]chatMessage
}

type chatMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
}

func newTurnModel(t *testing.T) *turnModel {
	m := &turnModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model    string        `json:"model"`
			Messages []chatMessage `json:"messages"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil || len(body.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.log = append(m.log, body.Messages)
		m.mu.Unlock()
		users := 0
		for _, msg := range body.Messages {
			if msg.Role == "user" {
				users++
			}
		}
		msg := map[string]any{"role": "assistant", "content": nil}
		finish := "tool_calls"
		if last := body.Messages[len(body.Messages)-1]; last.Role == "tool" {
			msg["content"], finish = fmt.Sprintf("refunded for turn %d", users), "stop"
		} else {
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", users), "type": "function",
				"function": map[string]any{"name": "refund", "arguments": fmt.Sprintf(`{"turn":%d}`, users)}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
		})
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *turnModel) requests() [][]chatMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]chatMessage(nil), m.log...)
}

// TestConversationOverOpenAI: over real HTTP to an OpenAI-compatible
// server, turn 2 — taken by another Agent — sends, in its first request,
// its own Agent's instructions first, then turn 1's user, assistant and
// tool messages in order, then its own message; turn 1's refund ran once.
// (Turn 2's own call never runs: its tokens were used by then.)
// The conversation's maxTokens (40) spans its turns: turn 1 takes 28, turn
// 2 may take 12 and ends LimitExceeded after one request, turn 3 never
// runs (LimitExceeded, no request).
func TestConversationOverOpenAI(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte(`{"refunded":true}`)) }
	m := newTurnModel(t)
	h.startManager(controllers.Options{})
	if err := h.c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "openai", Namespace: h.ns}, StringData: map[string]string{"apiKey": "sk-test"},
	}); err != nil {
		t.Fatal(err)
	}
	agent := func(name, instructions string) {
		h.createAgent(name, exagentv1.AgentSpec{
			Instructions: instructions,
			Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: m.srv.URL + "/v1",
				APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "openai", Key: "apiKey"}},
			Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
			Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		})
	}
	agent("front", "You are the front desk.")
	agent("billing", "You are billing.")
	h.createConversation("desk", "front", func(s *exagentv1.ConversationSpec) {
		s.Participants = []exagentv1.Participant{{Name: "billing", AgentRef: &exagentv1.LocalObjectReference{Name: "billing"}}}
		s.Limits.MaxTokens = ptr.To[int64](40)
	})
	h.createRun("desk-t1", "front", turnOf("desk"), func(s *exagentv1.AgentRunSpec) { s.Input = "refund order 1" })
	h.waitPhase("desk-t1", exagentv1.PhaseSucceeded)
	h.createRun("desk-t2", "billing", turnOf("desk"), func(s *exagentv1.AgentRunSpec) { s.Input = "and order 2" })
	second := h.waitPhase("desk-t2", exagentv1.PhaseFailed)
	if second.Status.Reason != exagentv1.ReasonLimitExceeded || second.Status.Ledger.Requests != 1 {
		t.Errorf("turn 2: %s %s after %d requests; want LimitExceeded after 1 (12 tokens left of 40)",
			second.Status.Reason, second.Status.Message, second.Status.Ledger.Requests)
	}

	reqs := m.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (two for turn 1, one for turn 2)", len(reqs))
	}
	var got []string
	for _, msg := range reqs[2] {
		got = append(got, fmt.Sprintf("%s:%v", msg.Role, msg.Content))
	}
	want := []string{"system:You are billing.", "user:refund order 1", "assistant:<nil>", `tool:{"refunded":true}`,
		"assistant:refunded for turn 1", "system:Turn 2 is taken by participant billing (Agent billing)", "user:and order 2"}
	if len(got) != len(want) {
		t.Fatalf("turn 2's first request:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("turn 2's request message %d = %q, want %q…", i, got[i], want[i])
		}
	}
	if n := ts.toolRequests("/refund"); n != 1 {
		t.Errorf("refund ran %d times, want 1 (turn 1's, once; turn 2 had used its tokens before its call)", n)
	}

	h.createRun("desk-t3", "front", turnOf("desk"), func(s *exagentv1.AgentRunSpec) { s.Input = "order 3" })
	third := h.waitPhase("desk-t3", exagentv1.PhaseCancelled)
	if third.Status.Reason != exagentv1.ReasonLimitExceeded || !strings.Contains(third.Status.Message, "maxTokens (40)") || len(m.requests()) != 3 {
		t.Errorf("turn 3: %s %q, %d requests in all; want LimitExceeded naming maxTokens (40), no request",
			third.Status.Reason, third.Status.Message, len(m.requests()))
	}
}
