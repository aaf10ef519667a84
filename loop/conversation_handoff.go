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
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Hand-offs (DESIGN §18). A turn runs under its own Agent: the leading
// system message of every model request a later turn makes is that
// Agent's instructions (turnInstructions), whatever Agent began the
// conversation — the history is the conversation's, the instructions,
// tools, policy and approvers are the participant's, and its fingerprints
// bind the turn as any run's. When the Agent taking a turn differs from
// the previous turn's, or its definition changed between the two turns,
// the turn's history says so in a system note before its own message, so
// the journal (and the model) show under which definition each turn ran.

// participant is the name the run takes its turn under: the conversation's
// participant it names, else its Agent.
func (e *Env) participant() string {
	if r := e.in.Run; r != nil && r.ConversationRef != nil && r.ConversationRef.Participant != "" {
		return r.ConversationRef.Participant
	}
	if e.in.Run != nil {
		return e.in.Run.AgentRef.Name
	}
	return ""
}

// handOffNote is the note a turn's history carries when it runs under
// another Agent than prev, or under a changed definition of the same one
// ("" when neither).
func handOffNote(prev *PrevTurn, env *Env, index int32) string {
	if prev == nil || env.in.Run == nil {
		return ""
	}
	agent, who := env.in.Run.AgentRef.Name, env.participant()
	if prev.Agent != "" && prev.Agent != agent {
		return fmt.Sprintf("Turn %d is taken by participant %s (Agent %s), after turn %s of Agent %s: from here on the instructions, tools and policy are Agent %s's.",
			index, who, agent, prev.Name, prev.Agent, agent)
	}
	b := env.binding
	if prev.Binding == nil || prev.Binding.Definition == "" || b.Definition == "" || prev.Binding.Definition == b.Definition {
		return ""
	}
	return fmt.Sprintf("Turn %d runs under a changed definition of Agent %s (generation %d, definition %s; turn %s ran under generation %d, definition %s).",
		index, agent, b.AgentGeneration, short(b.Definition), prev.Name, prev.Binding.AgentGeneration, short(prev.Binding.Definition))
}

// short is the first 12 characters of a fingerprint, for a note.
func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

// turnInstructions are the instructions a later turn's model requests
// lead with (ok false for a run that is not a later turn: its transcript's
// own system message leads).
func turnInstructions(s *Status, env *Env) (string, bool) {
	if s.Turn == nil || s.Turn.After == "" || env.in.Agent == nil {
		return "", false
	}
	return bound(env.in.Agent.Instructions, maxContent), true
}

// LeadWith gives msgs (a model request's whole transcript) the request's
// leading instructions: the first message, a system one, is replaced by
// them. Nothing changes when instructions is nil or the transcript does
// not lead with a system message.
func LeadWith(msgs []exagentv1.Message, instructions *string) []exagentv1.Message {
	if instructions == nil || len(msgs) == 0 || msgs[0].Role != exagentv1.RoleSystem {
		return msgs
	}
	out := append([]exagentv1.Message(nil), msgs...)
	out[0] = exagentv1.Message{Role: exagentv1.RoleSystem, Content: *instructions}
	return out
}
