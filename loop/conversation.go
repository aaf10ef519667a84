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

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// A conversation's turns run one at a time, in one order every replica
// computes the same way from what never changes: each turn's creation
// time, then its name (metadata the apiserver sets once). A turn may take
// its first step only once every turn before it has ended; a paused turn
// (AwaitingApproval, Approved) or an Uncertain one has not ended, so it
// blocks the queue (DESIGN §18).

// TurnView is what the queue needs to know of one turn.
type TurnView struct {
	Name    string
	Created time.Time
	Phase   exagentv1.RunPhase
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

// TurnEnded reports whether a turn in phase p no longer holds the queue:
// it ended, and not Uncertain (an Uncertain turn waits on a person).
func TurnEnded(p exagentv1.RunPhase) bool {
	return p.IsTerminal()
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
		if TurnEnded(t.Phase) || !before && !turnStarted(t.Phase) {
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

// PrevTurn is the turn a new turn continues: the one just before it, ended.
type PrevTurn struct {
	Name, UID string
	// Transcript and History are its status's: the sealed chain's head
	// and the tail still in status.
	Transcript *exagentv1.TranscriptHead
	History    []exagentv1.Message
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
func ContinueTurn(s Status, env *Env, index int32, prev *PrevTurn) (Status, error) {
	if s.Phase != exagentv1.PhaseQueued || s.Attempts != 0 || s.Turn != nil {
		return s, conflictf("only a turn that never started continues its conversation (phase %s, attempts %d)", s.Phase, s.Attempts)
	}
	if index < 1 {
		return s, invalidf("turn index %d: turns count from 1", index)
	}
	st := clone(s)
	st.Turn = &exagentv1.TurnStatus{Index: index}
	if prev == nil {
		return st, nil
	}
	if len(s.History) == 0 || s.History[len(s.History)-1].Role != exagentv1.RoleUser {
		return s, invalidf("the turn's history does not end with its own user message")
	}
	own := s.History[len(s.History)-1]
	st.Turn.After, st.Turn.AfterUID = prev.Name, prev.UID
	st.Transcript = nil
	if t := prev.Transcript; t != nil && t.Segments > 0 {
		head := *t
		head.BaseSegments, head.BaseHead = t.Segments, t.Head
		head.SegmentBytes = 0 // what this turn writes; the base is the earlier turns'
		st.Transcript = &head
	}
	st.History = make([]exagentv1.Message, 0, len(prev.History)+1)
	for i := range prev.History {
		st.History = append(st.History, *prev.History[i].DeepCopy())
	}
	st.History = append(st.History, own)
	if len(st.History) == 1 && st.Transcript == nil {
		st.History = s.History // an earlier turn with no transcript at all: start afresh
	}
	if err := checkSize(&st, env, env.budget/ioReserveDivisor, "continuing the conversation"); err != nil {
		return s, err
	}
	return st, nil
}
