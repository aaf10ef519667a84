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

package model

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// TestOpenAIWire sends one request through the SDK to a local server that
// speaks the chat-completions format, and checks both directions: the
// transcript and tools as sent, the tool calls and usage as returned.
func TestOpenAIWire(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &got)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m",
			"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",
			"tool_calls":[{"id":"call_1","type":"function","function":{"name":"refund","arguments":"{\"amount\":3}"}}]}}],
			"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`))
	}))
	defer srv.Close()
	p, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", APIKey: "k", Temperature: "0.5", HTTPClient: loopbackOnly(t)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Complete(context.Background(), loop.ModelRequest{
		Messages: []exagentv1.Message{
			{Role: exagentv1.RoleSystem, Content: "sys"},
			{Role: exagentv1.RoleUser, Content: "hi"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c0", Name: "lookup", Arguments: `{}`}}},
			{Role: exagentv1.RoleTool, ToolCallID: "c0", Content: "found"},
		},
		Tools: []loop.ToolDef{{Name: "refund", Description: "refunds", Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}}}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := loop.ModelResponse{ToolCalls: []exagentv1.MessageToolCall{{ID: "call_1", Name: "refund", Arguments: `{"amount":3}`}},
		PromptTokens: 9, CompletionTokens: 4}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	wantReq := map[string]any{
		"model": "m", "temperature": 0.5,
		"messages": []any{
			map[string]any{"role": "system", "content": "sys"},
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c0", "type": "function",
				"function": map[string]any{"name": "lookup", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": "c0", "content": "found"},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "refund", "description": "refunds",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "integer"}}}}}},
	}
	if diff := cmp.Diff(wantReq, got); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}
