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
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// Scripted replays spec.model.script: request Step gets script[Step]. It is
// deterministic, so a re-sent request returns the same turn.
type Scripted struct {
	Script []exagentv1.ScriptTurn
}

var _ Provider = Scripted{}

// Complete returns the turn for req.Step, or ErrScriptExhausted.
func (s Scripted) Complete(_ context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	if req.Sampling && len(req.Messages) > 0 {
		// An MCP server's sampling request: deterministic, from its last
		// message, so a re-sent request gets the same answer.
		last := req.Messages[len(req.Messages)-1].Content
		return loop.ModelResponse{Content: "sampled: " + last, PromptTokens: int64(len(last)), CompletionTokens: 1}, nil
	}
	if req.Step < 0 || int(req.Step) >= len(s.Script) {
		return loop.ModelResponse{}, fmt.Errorf("step %d of a %d-turn script: %w", req.Step, len(s.Script), ErrScriptExhausted)
	}
	turn := s.Script[req.Step]
	resp := loop.ModelResponse{Content: turn.Text}
	for i, tc := range turn.ToolCalls {
		id := tc.ID
		if id == "" {
			// Deterministic, so a re-sent request names its calls the same way.
			id = fmt.Sprintf("call-%d-%d", req.Step, i)
		}
		args := "{}"
		if tc.Arguments != nil && len(tc.Arguments.Raw) > 0 {
			var v any
			if err := json.Unmarshal(tc.Arguments.Raw, &v); err != nil {
				return loop.ModelResponse{}, fmt.Errorf("script turn %d call %q: arguments: %w", req.Step, tc.Name, err)
			}
			args = string(tc.Arguments.Raw)
		}
		resp.ToolCalls = append(resp.ToolCalls, exagentv1.MessageToolCall{ID: id, Name: tc.Name, Arguments: args})
	}
	return resp, nil
}
