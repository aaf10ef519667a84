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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// A participant ends a conversation (DESIGN §18) by calling a builtin
// EndConversation tool — which touches nothing: the engine closes the
// call itself, once the policy allows it (an Ask rule pauses it like any
// call) — or by a final answer that contains the conversation's
// spec.endMarker, journaled when the turn started. Either is journaled on
// the turn (status.turn.endedConversation); the conversation takes no
// turn after it, and RoundRobin stops.

// isEndConversation reports whether calls of tool end the conversation.
func (e *Env) isEndConversation(tool string) bool {
	t := e.tool(tool)
	return t != nil && t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinEndConversation
}

// endConversation closes a call of an EndConversation tool without IO.
func endConversation(st *Status, c *exagentv1.ToolCall) {
	if st.Turn == nil {
		c.State = exagentv1.CallFailed
		c.Outcome = &exagentv1.CallOutcome{Result: "this run is not a turn of a conversation: there is no conversation to end. Give your final answer."}
		return
	}
	st.Turn.EndedConversation = exagentv1.EndedByTool
	c.State = exagentv1.CallSucceeded
	c.Outcome = &exagentv1.CallOutcome{Succeeded: true,
		Result: "The conversation ends with this turn: no turn follows it. Give your final answer."}
}

// markEnd journals that a turn's final answer ended its conversation: it
// contains the endMarker the turn started with.
func markEnd(st *Status, output string) {
	t := st.Turn
	if t == nil || t.EndedConversation != "" || t.EndMarker == "" {
		return
	}
	if strings.Contains(output, t.EndMarker) {
		t.EndedConversation = exagentv1.EndedByMarker
	}
}

// SkipTurn ends a turn that never started because its conversation ended
// before it (an earlier turn ended it, or its fork cannot be read): phase
// Cancelled with reason (ConversationEnded, ForkNotFound) and a message
// that says what to do. Nothing ran, nothing is charged.
//
// Touches: phase, reason, message. Guard: phase Queued, never claimed.
func SkipTurn(s Status, env *Env, reason, message string, now time.Time) (Status, error) {
	if s.Phase != exagentv1.PhaseQueued || s.Attempts != 0 {
		return s, conflictf("only a turn that never started is skipped (phase %s, attempts %d)", s.Phase, s.Attempts)
	}
	st := clone(s)
	endRun(&st, env, now, exagentv1.PhaseCancelled, reason, bound(message, maxMessage))
	return st, nil
}
