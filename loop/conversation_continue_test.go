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

package loop

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestContinueTurn: a turn continues the turn before it — the sealed chain
// by reference (its head as the base, this turn's own segment bytes 0),
// that turn's tail in status, then this turn's own user message; its
// journal stays empty. The first turn only journals its place; a turn
// already placed or claimed is refused.
func TestContinueTurn(t *testing.T) {
	env := defaultEnv(t)
	queued, err := Start(Status{}, env, t0)
	if err != nil {
		t.Fatal(err)
	}
	prev := &PrevTurn{
		Name: "conv-t1", UID: "uid-0",
		Transcript: &exagentv1.TranscriptHead{Head: "h1", Segments: 2, Messages: 3, Bytes: 90, SegmentBytes: 500},
		History: []exagentv1.Message{
			{Role: exagentv1.RoleAssistant, Content: "calling", ToolCalls: []exagentv1.MessageToolCall{call("c1", "pay", `{}`)}},
			{Role: exagentv1.RoleTool, ToolCallID: "c1", Content: "paid"},
			{Role: exagentv1.RoleAssistant, Content: "done"},
		},
	}
	got, err := ContinueTurn(queued, env, TurnStart{Index: 2, Prev: prev})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&exagentv1.TurnStatus{Index: 2, After: "conv-t1", AfterUID: "uid-0", FirstMessage: 6, Participant: "agent"}, got.Turn); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
	wantHead := &exagentv1.TranscriptHead{Head: "h1", Segments: 2, Messages: 3, Bytes: 90, BaseSegments: 2, BaseHead: "h1"}
	if diff := cmp.Diff(wantHead, got.Transcript); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	want := append(append([]exagentv1.Message(nil), prev.History...), queued.History[len(queued.History)-1])
	if diff := cmp.Diff(want, got.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if len(got.Calls) != 0 || got.Phase != exagentv1.PhaseQueued {
		t.Errorf("calls %d, phase %s: want an empty journal, still Queued", len(got.Calls), got.Phase)
	}
	got.History[0].ToolCalls[0].ID = "changed"
	if prev.History[0].ToolCalls[0].ID != "c1" {
		t.Error("the turn's history shares the earlier turn's messages")
	}

	first, err := ContinueTurn(queued, env, TurnStart{Index: 1, Prev: nil})
	if err != nil {
		t.Fatal(err)
	}
	if first.Turn == nil || first.Turn.Index != 1 || first.Turn.After != "" || !cmp.Equal(first.History, queued.History) {
		t.Errorf("first turn: turn %+v, history changed %v", first.Turn, !cmp.Equal(first.History, queued.History))
	}
	if _, err := ContinueTurn(first, env, TurnStart{Index: 1, Prev: nil}); err == nil {
		t.Error("a turn placed twice")
	}
	claimed, _, err := Claim(queued, env, "h", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ContinueTurn(claimed, env, TurnStart{Index: 2, Prev: prev}); err == nil {
		t.Error("a claimed turn continued a conversation")
	}
}
