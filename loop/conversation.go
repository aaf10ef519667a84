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
	"cmp"
	"fmt"
	"slices"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// A conversation's turns run one at a time, in one order every replica
// computes the same way from what never changes: the instant admission
// stamped on each turn (exagent.io/turn-created, nanoseconds; the
// creationTimestamp where admission was bypassed), then its name. A turn may take
// its first step only once every turn before it has ended; a paused turn
// (AwaitingApproval, Approved) or an Uncertain one has not ended, so it
// blocks the queue (DESIGN §18) — nor has a cancelled (or interrupted)
// turn that holds a call whose outcome nobody knows, until it is resolved.

// TurnView is what the queue needs to know of one turn.
type TurnView struct {
	Name    string
	Created time.Time
	Phase   exagentv1.RunPhase
	// Uncertain: the turn holds a call in state Uncertain.
	Uncertain bool
	// Ended is when the turn ended (zero while it has not).
	Ended time.Time
	// EndedConversation says the turn ended its conversation
	// (exagentv1.EndedByTool, exagentv1.EndedByMarker).
	EndedConversation string
}

// ViewOf is the TurnView of a turn's status.
func ViewOf(name string, created time.Time, s *Status) TurnView {
	v := TurnView{Name: name, Created: created, Phase: s.Phase, Uncertain: anyCall(s, isUncertain)}
	if at, ok := EndedAt(s, created); ok {
		v.Ended = at
	}
	if s.Turn != nil && s.Phase.IsTerminal() {
		v.EndedConversation = s.Turn.EndedConversation
	}
	return v
}

// TurnViews are the TurnViews of runs (the turns of one conversation), in
// the conversation's order.
func TurnViews(runs []exagentv1.AgentRun) []TurnView {
	views := make([]TurnView, 0, len(runs))
	for i := range runs {
		views = append(views, ViewOf(runs[i].Name, runs[i].TurnCreated(), &runs[i].Status))
	}
	OrderTurns(views)
	return views
}

// OrderTurns sorts turns into the conversation's order.
func OrderTurns(turns []TurnView) {
	slices.SortFunc(turns, func(a, b TurnView) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// TurnEnded reports whether a turn no longer holds the queue: it ended,
// with no call whose outcome is unknown (an Uncertain turn, or one
// cancelled with a call in flight, waits on a person to resolve it).
func TurnEnded(t TurnView) bool {
	return t.Phase.IsTerminal() && !t.Uncertain
}

// TurnGate says whether turn me may start: open is the turn that holds
// the queue ("" when none: me may start) — the earliest turn before me
// that has not ended, else one after me that started already (a turn
// created in the same second under a name that sorts later may have
// started first: me waits for it rather than run beside it) — ahead how
// many turns hold it, and index me's place (from 1; 0 when me is not among
// turns). turns need not be sorted.
func TurnGate(turns []TurnView, me string) (open string, ahead, index int) {
	sorted := slices.Clone(turns)
	OrderTurns(sorted)
	before := true
	for i, t := range sorted {
		if t.Name == me {
			before, index = false, i+1
			continue
		}
		if TurnEnded(t) || !before && !turnStarted(t.Phase) {
			continue
		}
		if open == "" {
			open = t.Name
		}
		ahead++
	}
	return open, ahead, index
}

// turnStarted reports whether a turn in phase p has been claimed once.
func turnStarted(p exagentv1.RunPhase) bool {
	return p != "" && p != exagentv1.PhaseQueued
}

// WaitForTurn keeps a Queued turn from starting while its conversation
// holds it: reason WaitingForTurn (an earlier turn is open),
// ConversationNotFound or ConversationSuspended, and a message saying what
// it waits for. No claim, no model request, no IO.
//
// Touches: reason, message. Guard: phase Queued.
func WaitForTurn(s Status, reason, message string) (Status, error) {
	if s.Phase != exagentv1.PhaseQueued {
		return s, conflictf("only a Queued turn waits for its turn (phase %s)", s.Phase)
	}
	st := clone(s)
	setPhase(&st, exagentv1.PhaseQueued, reason, message)
	return st, nil
}

// TurnWaitMessage is WaitingForTurn's message: the open turn, and how many
// hold the queue.
func TurnWaitMessage(open string, ahead int) string {
	if ahead > 1 {
		return fmt.Sprintf("waiting for turn %s of the conversation to end (%d turns hold the queue)", open, ahead)
	}
	return fmt.Sprintf("waiting for turn %s of the conversation to end", open)
}

// TurnStart is what a turn starts from: its place, the turn before it
// (nil for the first), the conversation's endMarker, and — for a human
// participant's turn — who answers it.
type TurnStart struct {
	Index int32
	Prev  *PrevTurn
	// EndMarker is the conversation's spec.endMarker ("" when none).
	EndMarker string
	// Human is the human participant's people: the turn is a question
	// they answer (conversation_human.go). Nil for an Agent's turn.
	Human *exagentv1.Approvers
	// Now stamps a human turn's question.
	Now time.Time
	// TokensLeft, when set, is what the conversation's limits.maxTokens
	// leaves for this turn after the earlier turns' tokens: the turn's
	// maxTokens is journaled no higher (status.limits).
	TokensLeft *int64
}

// maxEndMarker bounds a journaled endMarker (the API's bound).
const maxEndMarker = 256

// PrevTurn is the turn a new turn continues: the one just before it, ended.
type PrevTurn struct {
	Name, UID string
	// Transcript and History are its status's: the sealed chain's head
	// and the tail still in status.
	Transcript *exagentv1.TranscriptHead
	History    []exagentv1.Message
	// Calls is its journal (to tell what became of a call it asked for
	// and never answered), Phase and Reason how it ended.
	Calls  []exagentv1.ToolCall
	Phase  exagentv1.RunPhase
	Reason string
	// Agent is the Agent it ran, Participant its participant and
	// Binding the fingerprints it ran under: a change to the next
	// turn's is said in the journal (handOffNote).
	Agent, Participant string
	Binding            *exagentv1.Binding
}

// ContinueTurn makes a turn that may start (every earlier turn ended)
// continue its conversation: its transcript is prev's — the sealed chain
// by reference (the head is journaled as the base: the segments are
// shared, never copied, and the hash chain goes on from them) and prev's
// tail in status — followed by this turn's own user message. prev is nil
// for the first turn. The conversation's first system message stays its
// first message; earlier tool calls are results in the history, never
// replayed: this turn's journal starts empty.
//
// Touches: turn {index, after, afterUID}, transcript, history.
// Guards: phase Queued, never claimed, turn not yet journaled.
func ContinueTurn(s Status, env *Env, t TurnStart) (Status, error) {
	index, prev := t.Index, t.Prev
	if s.Phase != exagentv1.PhaseQueued || s.Attempts != 0 || s.Turn != nil {
		return s, conflictf("only a turn that never started continues its conversation (phase %s, attempts %d)", s.Phase, s.Attempts)
	}
	if index < 1 {
		return s, invalidf("turn index %d: turns count from 1", index)
	}
	if len(s.History) == 0 || s.History[len(s.History)-1].Role != exagentv1.RoleUser {
		return s, invalidf("the turn's history does not end with its own user message")
	}
	st := clone(s)
	st.Turn = &exagentv1.TurnStatus{Index: index, Participant: env.participant(), EndMarker: truncateUTF8(t.EndMarker, maxEndMarker)}
	if t.TokensLeft != nil {
		l := env.forRun(&st).runLimits()
		l.MaxTokens = minPtr(l.MaxTokens, t.TokensLeft)
		st.Limits = l // journalLimits keeps it at the first claim
	}
	own := st.History[len(st.History)-1]
	st.History = st.History[:len(st.History)-1]
	if prev != nil {
		continueHistory(&st, env, index, prev)
	}
	if t.Human != nil {
		// A person's turn: the input is the question they are asked, not
		// a message of the conversation; their answer will be.
		if err := askParticipant(&st, env, own.Content, prev, t.Human, t.Now); err != nil { // conversation_human.go
			return s, err
		}
	} else {
		st.History = append(st.History, own)
	}
	st.Turn.FirstMessage = int64(len(st.History) - 1)
	if prev == nil && t.Human == nil {
		st.Turn.FirstMessage = 0 // the first turn's messages are all its own
	}
	if t.Human != nil {
		st.Turn.FirstMessage++ // the answer, once given
	}
	if st.Transcript != nil {
		st.Turn.FirstMessage += st.Transcript.Messages
	}
	if err := checkSize(&st, env, env.budget/ioReserveDivisor, "continuing the conversation"); err != nil {
		return s, err
	}
	return st, nil
}

// continueHistory gives st prev's transcript: the sealed chain by
// reference (its head journaled as the base), prev's tail in status, the
// answers prev owes its last calls, and a hand-off note. An earlier turn
// with no transcript at all leaves st's own (system message) as it is.
func continueHistory(st *Status, env *Env, index int32, prev *PrevTurn) {
	st.Turn.After, st.Turn.AfterUID = prev.Name, prev.UID
	var head *exagentv1.TranscriptHead
	if t := prev.Transcript; t != nil && t.Segments > 0 {
		h := *t
		h.BaseSegments, h.BaseHead = t.Segments, t.Head
		h.SegmentBytes = 0 // what this turn writes; the base is the earlier turns'
		head = &h
	}
	if head == nil && len(prev.History) == 0 {
		return // start afresh
	}
	st.Transcript = head
	st.History = make([]exagentv1.Message, 0, len(prev.History)+2)
	for i := range prev.History {
		st.History = append(st.History, *prev.History[i].DeepCopy())
	}
	st.History = append(st.History, unanswered(prev)...)
	if note := handOffNote(prev, env, index); note != "" {
		st.History = append(st.History, exagentv1.Message{Role: exagentv1.RoleSystem, Content: note})
	}
}

// Interrupt ends a turn that a newer turn of its conversation interrupts
// (doubleText Interrupt), as a cancel does: the claim is revoked (its
// owner commits nothing more and dispatches nothing new), a call in
// flight is recorded Uncertain — its effect may still happen, and the turn
// holds the conversation's queue until someone resolves it — and pending
// approvals are Cancelled. by is the interrupting turn, actor who created
// it.
//
// Touches: phase Cancelled, reason Interrupted, message, claim, ledger
// active time, calls in flight, approvals, pendingApprovals.
// Guard: the turn has not ended.
func Interrupt(s Status, env *Env, by, actor string, now time.Time) (Status, error) {
	return supersede(s, env, exagentv1.ReasonInterrupted, "turn", "interrupt",
		fmt.Sprintf("interrupted by turn %s of %s (the conversation's doubleText is Interrupt)", by, actor), now)
}

// supersede ends a run a newer one takes the place of (Interrupt,
// Replace) as a cancel does: the claim revoked, a call in flight
// Uncertain — never repeated — and pending approvals Cancelled; phase
// Cancelled with reason and msg (plus the Uncertain note). what names the
// run in the refusal, op the transition in a size error.
func supersede(s Status, env *Env, reason, what, op, msg string, now time.Time) (Status, error) {
	env = env.forRun(&s)
	if s.Phase.IsTerminal() {
		return s, notPendingf("%s is %s: nothing to %s", what, phaseName(s.Phase), op)
	}
	st := clone(s)
	if st.Claim != nil {
		_, never := env.ActiveTimeLimit()
		settleLost(&st, never, now)
		st.Claim = nil
	}
	closeOpen(&st, exagentv1.ApprovalCancelled, now)
	if anyCall(&st, isUncertain) {
		msg += cancelledUncertainNote
	}
	setPhase(&st, exagentv1.PhaseCancelled, reason, msg)
	if err := checkSize(&st, env, 0, op); err != nil {
		return s, err
	}
	return st, nil
}

// unanswered are the tool messages a turn that ended mid-step (cancelled,
// interrupted, failed) owes its last assistant message: one per call it
// asked for and never answered, saying what became of it — its outcome
// when one is journaled (a Resolve records it), else that it did not run
// (or that nobody knows whether it ran). Every tool call the next model
// request carries then has its answer, as the providers require.
func unanswered(prev *PrevTurn) []exagentv1.Message {
	h := prev.History
	last := -1
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == exagentv1.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 || len(h[last].ToolCalls) == 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range h[last+1:] {
		if m.Role == exagentv1.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []exagentv1.Message
	for _, tc := range h[last].ToolCalls {
		if answered[tc.ID] {
			continue
		}
		text := fmt.Sprintf("not run: turn %s ended (%s %s) before this call ran", prev.Name, prev.Phase, prev.Reason)
		for i := range prev.Calls {
			c := &prev.Calls[i]
			if c.ID != tc.ID {
				continue
			}
			switch {
			case c.Outcome != nil && c.Outcome.Result != "":
				text = c.Outcome.Result
			case c.State == exagentv1.CallUncertain:
				text = fmt.Sprintf("unknown: turn %s ended (%s) while this call was in flight; whether it had its effect is not known", prev.Name, prev.Reason)
			}
		}
		out = append(out, exagentv1.Message{Role: exagentv1.RoleTool, ToolCallID: tc.ID, Content: bound(text, maxContent)})
	}
	return out
}
