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
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
)

func TestScripted(t *testing.T) {
	s := Scripted{Script: []exagentv1.ScriptTurn{
		{ToolCalls: []exagentv1.ScriptToolCall{
			{ID: "a", Name: "refund", Arguments: fixture.RawJSON(`{"amount":5}`)},
			{Name: "notify"},
		}},
		{Text: "done"},
	}}
	tests := map[string]struct {
		step    int32
		want    loop.ModelResponse
		wantErr error
	}{
		"tool calls keep their ids and get deterministic ones": {step: 0, want: loop.ModelResponse{ToolCalls: []exagentv1.MessageToolCall{
			{ID: "a", Name: "refund", Arguments: `{"amount":5}`}, {ID: "call-0-1", Name: "notify", Arguments: "{}"}}}},
		"text":           {step: 1, want: loop.ModelResponse{Content: "done"}},
		"past the end":   {step: 2, wantErr: ErrScriptExhausted},
		"negative steps": {step: -1, wantErr: ErrScriptExhausted},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := s.Complete(context.Background(), loop.ModelRequest{Step: tc.step})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}
