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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// ConversationView is what a conversation's status says of its turns.
type ConversationView struct {
	Phase exagentv1.ConversationPhase
	// Open is the turn that holds the queue ("" when none), Queued how
	// many turns wait behind it.
	Open   string
	Queued int32
	// Reason and Message explain Phase (the Ready condition's).
	Reason, Message string
	// LastEnded is when the newest ended turn ended (zero: none has).
	LastEnded time.Time
	// EndedBy is the turn that ended the conversation ("" when none did).
	EndedBy string
}

// ViewConversation computes a conversation's phase from its turns (in any
// order): the open turn's — Running, AwaitingApproval (paused or just
// approved), Uncertain (it waits on a person to resolve a call) — else
// Suspended, Ended (maxTurns taken; 0: no bound) or Idle.
func ViewConversation(turns []TurnView, suspend bool, maxTurns int32) ConversationView {
	sorted := append([]TurnView(nil), turns...)
	OrderTurns(sorted)
	var v ConversationView
	for _, t := range sorted {
		if TurnEnded(t) {
			continue
		}
		if v.Open == "" {
			v.Open = t.Name
			continue
		}
		v.Queued++
	}
	var open, ender TurnView
	for _, t := range sorted {
		if t.Name == v.Open {
			open = t
		}
		if t.Ended.After(v.LastEnded) {
			v.LastEnded = t.Ended
		}
		if t.EndedConversation != "" && v.EndedBy == "" {
			ender, v.EndedBy = t, t.Name
		}
	}
	switch {
	case v.Open != "" && (open.Phase == exagentv1.PhaseUncertain || open.Uncertain):
		v.Phase, v.Reason = exagentv1.ConversationUncertain, exagentv1.ReasonOutcomeUncertain
		v.Message = fmt.Sprintf("turn %s has a call whose outcome is unknown: resolve it (kubectl approve resolve) before the next turn runs", open.Name)
	case v.Open != "" && (open.Phase == exagentv1.PhaseAwaitingApproval || open.Phase == exagentv1.PhaseApproved):
		v.Phase, v.Reason = exagentv1.ConversationAwaitingApproval, exagentv1.ReasonPending
		v.Message = fmt.Sprintf("turn %s waits for a decision", open.Name)
	case v.Open != "" && suspend && !turnStarted(open.Phase):
		v.Phase, v.Reason = exagentv1.ConversationSuspended, exagentv1.ReasonConversationSuspended
		v.Message = fmt.Sprintf("suspended: turn %s and %d more wait for spec.suspend to be false", open.Name, v.Queued)
	case v.Open != "":
		v.Phase, v.Reason = exagentv1.ConversationRunning, exagentv1.ReasonRunning
		v.Message = fmt.Sprintf("turn %s is running", open.Name)
	case v.EndedBy != "":
		v.Phase, v.Reason = exagentv1.ConversationEnded, exagentv1.ReasonConversationEnded
		how := "called EndConversation"
		if ender.EndedConversation == exagentv1.EndedByMarker {
			how = "answered with the conversation's spec.endMarker"
		}
		v.Message = fmt.Sprintf("turn %s %s: the conversation takes no more turns", ender.Name, how)
	case maxTurns > 0 && int32(len(turns)) >= maxTurns:
		v.Phase, v.Reason = exagentv1.ConversationEnded, exagentv1.ReasonConversationEnded
		v.Message = fmt.Sprintf("the conversation took its %d turns (spec.limits.maxTurns)", maxTurns)
	case suspend:
		v.Phase, v.Reason = exagentv1.ConversationSuspended, exagentv1.ReasonConversationSuspended
		v.Message = "suspended: no new turn starts until spec.suspend is false"
	default:
		v.Phase, v.Reason = exagentv1.ConversationIdle, exagentv1.ReasonConversationIdle
		v.Message = fmt.Sprintf("waiting for the next turn (%d taken)", len(turns))
	}
	return v
}
