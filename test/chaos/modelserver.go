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

// ChatMessage is one message of a model request as the model server
// read it: its role, text, the call a tool message answers, and the IDs
// of the calls an assistant message asked for.
type ChatMessage struct {
	Role, Content, ToolCallID string
	ToolCalls                 []string
}

// ModelServer speaks the OpenAI chat-completions wire format over real
// HTTP on 127.0.0.1. The script says what it answers to a run at a step.
// The run is named by the request's last user message with the suite's
// input prefix — a turn of a conversation also carries the earlier
// turns' inputs — and the step is the number of assistant messages after
// it. Every request is journaled, with its messages and the run's
// resourceVersion read while the request is held.
type ModelServer struct {
	recordingServer

	script func(run types.NamespacedName, step int32) Turn
}

// NewModelServer listens on 127.0.0.1 and answers with script.
func NewModelServer(reader client.Reader, script func(run types.NamespacedName, step int32) Turn) (*ModelServer, error) {
	ms := &ModelServer{script: script}
	if err := ms.listen("model server", "/v1", reader, ms.serve); err != nil {
		return nil, err
	}
	return ms, nil
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
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
		text, _ := m.Content.(string)
		cm := ChatMessage{Role: m.Role, Content: text, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, c.ID)
		}
		req.Messages = append(req.Messages, cm)
		switch m.Role {
		case "assistant":
			req.Step++
		case "user":
			if strings.HasPrefix(text, RunInputPrefix) {
				if ns, name, ok := strings.Cut(strings.TrimPrefix(text, RunInputPrefix), "/"); ok && len(strings.Fields(name)) > 0 {
					req.Run = types.NamespacedName{Namespace: ns, Name: strings.Fields(name)[0]}
					req.Step = 0 // this run's own steps start here
				}
			}
		}
	}
	req.StoreRV, req.RunUID = readRV(r.Context(), ms.reader, req.Run)

	if !ms.record(r.Context(), req, nil) {
		return
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
