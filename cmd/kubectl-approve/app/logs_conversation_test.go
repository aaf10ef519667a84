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

package app

import (
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// TestTurnEntries: a turn's lines start at its own user message
// (status.turn.firstMessage) — the earlier turns' messages its transcript
// starts with, and their calls, are not printed again — and end with the
// turn's end.
func TestTurnEntries(t *testing.T) {
	run := &exagentv1.AgentRun{}
	run.Name = "conv-t2"
	run.Status = exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseSucceeded,
		Turn:  &exagentv1.TurnStatus{Index: 2, After: "conv-t1", FirstMessage: 4},
		History: []exagentv1.Message{
			{Role: exagentv1.RoleSystem, Content: "You are helpful."},
			{Role: exagentv1.RoleUser, Content: "pay 5"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c1", Name: "pay", Arguments: `{"amount":5}`}}},
			{Role: exagentv1.RoleTool, ToolCallID: "c1", Content: "paid"},
			{Role: exagentv1.RoleUser, Content: "and 7 more"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c2", Name: "pay", Arguments: `{"amount":7}`}}},
			{Role: exagentv1.RoleTool, ToolCallID: "c2", Content: "paid 7"},
			{Role: exagentv1.RoleAssistant, Content: "done"},
		},
		Calls: []exagentv1.ToolCall{{ID: "c2", Tool: "pay", Args: `{"amount":7}`, State: exagentv1.CallSucceeded}},
	}
	var text []string
	for _, e := range turnEntries(run, nil) {
		text = append(text, e.text)
	}
	got := strings.Join(text, "\n")
	for _, want := range []string{"[user] and 7 more", "calls pay({\"amount\":7}) as c2", "[tool c2] paid 7", "[assistant] done", "run ended Succeeded"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, not := range []string{"pay 5", "as c1", "You are helpful"} {
		if strings.Contains(got, not) {
			t.Errorf("the earlier turn's %q printed again in:\n%s", not, got)
		}
	}
}
