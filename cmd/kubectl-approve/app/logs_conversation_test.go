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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestTurnEntries: a turn's lines start at its own user message
// (status.turn.firstMessage) — the earlier turns' messages its transcript
// starts with, and their calls, are not printed again — and end with the
// turn's end.
func TestTurnEntries(t *testing.T) {
	run := &exagentv1.AgentRun{}
	run.Name = "conv-t2"
	run.Spec = exagentv1.AgentRunSpec{Input: "and 7 more", ConversationRef: &exagentv1.ConversationRef{Name: "conv"}}
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
	if n := strings.Count(got, "and 7 more"); n != 1 || !strings.HasPrefix(got, "[user] and 7 more\n") {
		t.Errorf("the turn's input printed %d times, want once, first:\n%s", n, got)
	}
}

// TestThreadPrinterFollows: a follower handed each version of a turn
// prints each line once, in the order it was journaled: the input while
// the turn is queued (its provisional history is not its own yet), then
// its own messages once it started — the input never twice — and its end.
func TestThreadPrinterFollows(t *testing.T) {
	queued := &exagentv1.AgentRun{}
	queued.Name, queued.UID = "conv-t2", "uid-2"
	queued.Spec = exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "pay"}, Input: "and 7 more",
		ConversationRef: &exagentv1.ConversationRef{Name: "conv"}, RequestedBy: &exagentv1.Actor{Username: "alice"}}
	queued.Status = exagentv1.AgentRunStatus{Phase: exagentv1.PhaseQueued, Reason: exagentv1.ReasonWaitingForTurn,
		Message: "waiting for turn conv-t1 of the conversation to end",
		History: []exagentv1.Message{{Role: exagentv1.RoleSystem, Content: "You are helpful."}, {Role: exagentv1.RoleUser, Content: "and 7 more"}}}
	started := queued.DeepCopy()
	started.Status = exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning,
		Turn: &exagentv1.TurnStatus{Index: 2, After: "conv-t1", FirstMessage: 2},
		History: []exagentv1.Message{{Role: exagentv1.RoleSystem, Content: "You are helpful."}, {Role: exagentv1.RoleUser, Content: "pay 5"},
			{Role: exagentv1.RoleUser, Content: "and 7 more"}}}
	ended := started.DeepCopy()
	ended.Status.Phase = exagentv1.PhaseSucceeded
	ended.Status.History = append(ended.Status.History, exagentv1.Message{Role: exagentv1.RoleAssistant, Content: "done"})

	var out strings.Builder
	p := newThreadPrinter(&out, nil, true)
	for _, v := range []*exagentv1.AgentRun{queued, queued, started, ended, ended} {
		if err := p.show(t.Context(), v); err != nil {
			t.Fatal(err)
		}
	}
	want := "── turn 1: conv-t2 (agent pay, asked by alice)\n" +
		"[user] and 7 more\n" +
		"queued: waiting for turn conv-t1 of the conversation to end\n" +
		"[assistant] done\n" +
		"run ended Succeeded\n"
	if out.String() != want {
		t.Errorf("the follower printed:\n%s\nwant:\n%s", out.String(), want)
	}
}
