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

package loop_test

import (
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// TestTurnGate: a turn starts only once every earlier turn ended; a
// paused, Approved or Uncertain turn holds the queue; the order is
// creation time, then name — the same whatever order the turns are given
// in, so every replica agrees.
func TestTurnGate(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	turn := func(name string, sec int, p exagentv1.RunPhase) loop.TurnView {
		return loop.TurnView{Name: name, Created: t0.Add(time.Duration(sec) * time.Second), Phase: p}
	}
	tests := map[string]struct {
		turns     []loop.TurnView
		me        string
		wantOpen  string
		wantAhead int
		wantIndex int
	}{
		"the first turn starts": {
			turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseQueued)}, me: "t1", wantIndex: 1,
		},
		"a paused turn holds the next": {
			turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseAwaitingApproval), turn("t2", 1, exagentv1.PhaseQueued)},
			me:    "t2", wantOpen: "t1", wantAhead: 1, wantIndex: 2,
		},
		"an Uncertain turn holds the queue": {
			turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseUncertain), turn("t2", 1, exagentv1.PhaseQueued)},
			me:    "t2", wantOpen: "t1", wantAhead: 1, wantIndex: 2,
		},
		"an Approved turn holds the queue": {
			turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseApproved), turn("t2", 1, exagentv1.PhaseQueued)},
			me:    "t2", wantOpen: "t1", wantAhead: 1, wantIndex: 2,
		},
		"the third waits behind both, the first named": {
			turns: []loop.TurnView{turn("t3", 2, exagentv1.PhaseQueued), turn("t2", 1, exagentv1.PhaseQueued), turn("t1", 0, exagentv1.PhaseRunning)},
			me:    "t3", wantOpen: "t1", wantAhead: 2, wantIndex: 3,
		},
		"ended turns let it go, whatever their end": {
			turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseFailed), turn("t2", 1, exagentv1.PhaseCancelled), turn("t3", 2, exagentv1.PhaseQueued)},
			me:    "t3", wantIndex: 3,
		},
		"a later turn not started never holds an earlier one": {
			turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseQueued), turn("t2", 1, exagentv1.PhaseQueued)},
			me:    "t1", wantIndex: 1,
		},
		"a later turn that started first is waited for, never run beside": {
			turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseQueued), turn("t2", 0, exagentv1.PhaseRunning)},
			me:    "t1", wantOpen: "t2", wantAhead: 1, wantIndex: 1,
		},
		"same second: by name": {
			turns: []loop.TurnView{turn("b", 0, exagentv1.PhaseQueued), turn("a", 0, exagentv1.PhaseRunning)},
			me:    "b", wantOpen: "a", wantAhead: 1, wantIndex: 2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			open, ahead, index := loop.TurnGate(tc.turns, tc.me)
			if open != tc.wantOpen || ahead != tc.wantAhead || index != tc.wantIndex {
				t.Fatalf("TurnGate = (%q, %d, %d), want (%q, %d, %d)", open, ahead, index, tc.wantOpen, tc.wantAhead, tc.wantIndex)
			}
		})
	}
}

// TestWaitForTurn: a Queued turn waits with reason WaitingForTurn and a
// message naming the open turn; any other phase is refused.
func TestWaitForTurn(t *testing.T) {
	s := loop.Status{Phase: exagentv1.PhaseQueued, Reason: exagentv1.ReasonQueued}
	got, err := loop.WaitForTurn(s, exagentv1.ReasonWaitingForTurn, loop.TurnWaitMessage("conv-t1", 2))
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != exagentv1.PhaseQueued || got.Reason != exagentv1.ReasonWaitingForTurn || !strings.Contains(got.Message, "conv-t1") {
		t.Fatalf("status %s %s %q, want Queued WaitingForTurn naming conv-t1", got.Phase, got.Reason, got.Message)
	}
	if got.Claim != nil || got.Attempts != 0 {
		t.Fatalf("a waiting turn holds no claim: %+v", got.Claim)
	}
	if _, err := loop.WaitForTurn(loop.Status{Phase: exagentv1.PhaseRunning}, exagentv1.ReasonWaitingForTurn, "x"); err == nil {
		t.Fatal("a Running run was made to wait for its turn")
	}
}

// TestViewConversation: the conversation's phase is its open turn's —
// Uncertain, AwaitingApproval (paused or approved), Running — else
// Suspended, Ended once maxTurns are taken, or Idle; open is the earliest
// turn not ended and queued those behind it.
func TestViewConversation(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	turn := func(name string, sec int, p exagentv1.RunPhase) loop.TurnView {
		return loop.TurnView{Name: name, Created: t0.Add(time.Duration(sec) * time.Second), Phase: p}
	}
	ended := turn("t1", 0, exagentv1.PhaseSucceeded)
	tests := map[string]struct {
		turns     []loop.TurnView
		suspend   bool
		max       int32
		want      exagentv1.ConversationPhase
		wantOpen  string
		wantQueue int32
	}{
		"no turn":                {want: exagentv1.ConversationIdle},
		"between turns":          {turns: []loop.TurnView{ended}, want: exagentv1.ConversationIdle},
		"running":                {turns: []loop.TurnView{ended, turn("t2", 1, exagentv1.PhaseRunning), turn("t3", 2, "")}, want: exagentv1.ConversationRunning, wantOpen: "t2", wantQueue: 1},
		"paused":                 {turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseAwaitingApproval), turn("t2", 1, exagentv1.PhaseQueued)}, want: exagentv1.ConversationAwaitingApproval, wantOpen: "t1", wantQueue: 1},
		"approved":               {turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseApproved)}, want: exagentv1.ConversationAwaitingApproval, wantOpen: "t1"},
		"uncertain":              {turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseUncertain), turn("t2", 1, exagentv1.PhaseQueued)}, want: exagentv1.ConversationUncertain, wantOpen: "t1", wantQueue: 1},
		"suspended":              {turns: []loop.TurnView{ended}, suspend: true, want: exagentv1.ConversationSuspended},
		"suspended, one waits":   {turns: []loop.TurnView{ended, turn("t2", 1, exagentv1.PhaseQueued)}, suspend: true, want: exagentv1.ConversationSuspended, wantOpen: "t2"},
		"suspended, one runs on": {turns: []loop.TurnView{turn("t1", 0, exagentv1.PhaseRunning)}, suspend: true, want: exagentv1.ConversationRunning, wantOpen: "t1"},
		"maxTurns taken":         {turns: []loop.TurnView{ended, turn("t2", 1, exagentv1.PhaseFailed)}, max: 2, want: exagentv1.ConversationEnded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := loop.ViewConversation(tc.turns, tc.suspend, tc.max)
			if v.Phase != tc.want || v.Open != tc.wantOpen || v.Queued != tc.wantQueue || v.Reason == "" || v.Message == "" {
				t.Fatalf("view %+v, want %s open %q queued %d with a reason and a message", v, tc.want, tc.wantOpen, tc.wantQueue)
			}
		})
	}
}
