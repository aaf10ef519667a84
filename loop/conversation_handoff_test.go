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
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestHandOff: a turn taken by another Agent leads its model requests
// with its own Agent's instructions, and its history notes the hand-off
// before its own message; a turn of the same Agent under a changed
// definition notes that; the same definition notes nothing.
func TestHandOff(t *testing.T) {
	first := mustEnv(t, MakeAgent().Spec(), MakeRun().Spec())
	t1, err := Start(Status{}, first, t0)
	if err != nil {
		t.Fatal(err)
	}
	prevHistory := append(t1.History, exagentv1.Message{Role: exagentv1.RoleAssistant, Content: "turn one's answer"})
	prev := &PrevTurn{Name: "conv-t1", UID: "uid-1", History: prevHistory, Phase: exagentv1.PhaseSucceeded,
		Agent: "agent", Binding: &exagentv1.Binding{Definition: first.Binding().Definition, AgentGeneration: 1}}

	reviewer := fixture.MakeAgent("reviewer", "ns").Instructions("You review.").Script(fixture.TextTurn("ok")).Spec()
	tests := []struct {
		name             string
		env              *Env
		wantNote         string // "" for none
		wantInstructions string
	}{
		{"another Agent", mustEnv(t, reviewer, MakeRun().Agent("reviewer").Spec()), "is taken by participant reviewer (Agent reviewer), after turn conv-t1 of Agent agent", "You review."},
		{"changed definition", mustEnv(t, MakeAgent().Instructions("You are terse.").Spec(), MakeRun().Spec()), "runs under a changed definition of Agent agent", "You are terse."},
		{"same definition", first, "", "You are helpful."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			queued, err := Start(Status{}, tc.env, t0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ContinueTurn(queued, tc.env, TurnStart{Index: 2, Prev: prev})
			if err != nil {
				t.Fatal(err)
			}
			h := got.History
			if h[len(h)-1].Role != exagentv1.RoleUser {
				t.Fatalf("the turn's history ends with %s, not its own message", h[len(h)-1].Role)
			}
			note := h[len(h)-2]
			if tc.wantNote == "" {
				if note.Role == exagentv1.RoleSystem {
					t.Errorf("a note with nothing changed: %q", note.Content)
				}
			} else if note.Role != exagentv1.RoleSystem || !strings.Contains(note.Content, tc.wantNote) {
				t.Errorf("note %s %q, want a system note containing %q", note.Role, note.Content, tc.wantNote)
			}
			claimed, f, err := Claim(got, tc.env, "h", t0)
			if err != nil {
				t.Fatal(err)
			}
			_, act, err := Step(claimed, tc.env, f, t0)
			if err != nil {
				t.Fatal(err)
			}
			if act.Kind != ActCallModel {
				t.Fatalf("action %v, want a model request", act.Kind)
			}
			if m := act.Model.Messages[0]; m.Role != exagentv1.RoleSystem || m.Content != tc.wantInstructions {
				t.Errorf("the request leads with %s %q, want the turn's Agent's instructions %q", m.Role, m.Content, tc.wantInstructions)
			}
			if got.History[0].Content != "You are helpful." {
				t.Errorf("the journaled history was rewritten: %q", got.History[0].Content)
			}
		})
	}
}

// TestLeadWith: the leading system message is replaced, nothing else, and
// the input is not changed.
func TestLeadWith(t *testing.T) {
	in := []exagentv1.Message{{Role: exagentv1.RoleSystem, Content: "old"}, {Role: exagentv1.RoleUser, Content: "hi"}}
	s := "new"
	got := LeadWith(in, &s)
	if got[0].Content != "new" || got[1].Content != "hi" || in[0].Content != "old" {
		t.Errorf("LeadWith: got %+v, input %+v", got, in)
	}
	if got := LeadWith(in[1:], &s); got[0].Content != "hi" {
		t.Errorf("a transcript that leads with a user message was changed: %+v", got)
	}
	if got := LeadWith(in, nil); got[0].Content != "old" {
		t.Errorf("nil instructions changed the transcript: %+v", got)
	}
}
