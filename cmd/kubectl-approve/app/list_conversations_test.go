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
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestApprovalTableNamesTheConversation: an approval of a turn names the
// conversation it holds up and the turn's place (CONVERSATION, only when
// a row is a turn); -w keeps the columns of the header it printed.
func TestApprovalTableNamesTheConversation(t *testing.T) {
	turn := makeRun("billing-x7k2p", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
		Call(call("c1", "charge", `{"amount":5}`, exagentv1.CallPending)).
		Approval(approval("c1-r1", "c1", 1, exagentv1.ApprovalPending, time.Minute, 0)).
		Apply(func(r *exagentv1.AgentRun) {
			r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "billing"}
			r.Status.Turn = &exagentv1.TurnStatus{Index: 3}
		}).Obj()
	plain := makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
		Call(call("c1", "scale", `{}`, exagentv1.CallPending)).
		Approval(approval("c1-r1", "c1", 1, exagentv1.ApprovalPending, time.Minute, 0)).Obj()
	rows := pendingApprovals([]exagentv1.AgentRun{*turn, *plain})
	var b bytes.Buffer
	if err := printApprovalTable(&b, rows, t0, false); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   RUN             CONVERSATION   APPROVAL   TOOL     ARGS           REQUESTED   EXPIRES
demo        billing-x7k2p   billing #3     c1-r1      charge   {"amount":5}   60s         never
demo        scale-web       -              c1-r1      scale    {}             60s         never
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if rows[0].Conversation != "billing" || rows[0].Turn != 3 || rows[1].Conversation != "" {
		t.Errorf("rows %+v", rows)
	}
	// list -w: the header printed without the column; a turn's row
	// arriving later keeps the table's columns.
	var w bytes.Buffer
	s := &approvalStream{o: &listOptions{clock: nil}, printed: map[string]bool{}}
	s.o.Out = &w
	s.o.clock = fixedClock{}
	if err := s.emit(rows[1:]); err != nil {
		t.Fatal(err)
	}
	if err := s.emit(rows[:1]); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(w.String()), "\n") {
		if n := len(strings.Fields(line)); n != 7 && !strings.HasPrefix(line, "NAMESPACE") {
			t.Errorf("list -w row %q has %d columns, want the header's 7", line, n)
		}
	}
}

// fixedClock is t0.
type fixedClock struct{}

func (fixedClock) Now() time.Time                  { return t0 }
func (fixedClock) Since(t time.Time) time.Duration { return t0.Sub(t) }

// TestWaitingRow: a waiting conversation's row says what its open turn
// waits for — a decision, a human participant's answer, a resolve — and
// since when; an open turn the person may not read still gives a row.
func TestWaitingRow(t *testing.T) {
	conv := &exagentv1.Conversation{Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: "charges"}},
		Status: exagentv1.ConversationStatus{Phase: exagentv1.ConversationAwaitingApproval, Open: "billing-t2", Queued: 2,
			Turns: []exagentv1.Turn{{Index: 1, Run: "billing-t1"}, {Index: 2, Run: "billing-t2", Participant: "charges"}}}}
	conv.Name, conv.Namespace = "billing", "demo"
	decision := makeRun("billing-t2", "demo").Phase(exagentv1.PhaseAwaitingApproval).
		Call(call("c1", "charge", `{}`, exagentv1.CallPending)).
		Approval(approval("c1-r1", "c1", 1, exagentv1.ApprovalPending, time.Minute, 0)).Obj()
	human := decision.DeepCopy()
	human.Status.Turn = &exagentv1.TurnStatus{Index: 2, Participant: "oncall", Human: true}
	human.Status.Approvals[0].Kind = exagentv1.KindQuestion
	human.Status.Approvals[0].Question = &exagentv1.Question{Text: "go on?"}
	uncertain := makeRun("billing-t2", "demo").Phase(exagentv1.PhaseUncertain).
		Call(call("c2", "charge", `{}`, exagentv1.CallUncertain)).Obj()
	tc := map[string]struct {
		open                   *exagentv1.AgentRun
		waitsFor, participant  string
		approvals, uncertainty int
	}{
		"a decision":      {open: decision, waitsFor: "a decision on approval c1-r1 (charge)", participant: "charges", approvals: 1},
		"a person's turn": {open: human, waitsFor: "participant oncall to answer c1-r1", participant: "oncall", approvals: 1},
		"a resolve":       {open: uncertain, waitsFor: "a resolve of call c2 (charge)", participant: "charges", uncertainty: 1},
		"unreadable":      {waitsFor: "turn billing-t2 is AwaitingApproval", participant: "charges"},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			w := waitingRow(conv, tc.open)
			if w.WaitsFor != tc.waitsFor || w.Participant != tc.participant || w.Turn != 2 || w.Queued != 2 ||
				len(w.Approvals) != tc.approvals || len(w.UncertainCalls) != tc.uncertainty {
				t.Fatalf("row %+v", w)
			}
			if tc.approvals > 0 && (w.Since == nil || !w.Since.Equal(metav1.NewTime(t0.Add(-time.Minute)).Time)) {
				t.Errorf("since %v, want when the approval was requested", w.Since)
			}
		})
	}
	var b bytes.Buffer
	if err := printConversationTable(&b, []waitingConversation{waitingRow(conv, decision)}, t0, false); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   CONVERSATION   PHASE              TURN              WAITS FOR                               QUEUED   SINCE
demo        billing        AwaitingApproval   billing-t2 (#2)   a decision on approval c1-r1 (charge)   2        60s
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
