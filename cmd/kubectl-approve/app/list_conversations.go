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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// waitingConversation is one conversation held up by a person: its open
// turn waits for a decision, an answer (a human participant's turn is a
// question) or a resolve, and every turn behind it waits too. It is what
// `list --conversations` prints, one row (or -o json|yaml item) each.
type waitingConversation struct {
	Namespace    string `json:"namespace"`
	Conversation string `json:"conversation"`
	Agent        string `json:"agent"`
	Phase        string `json:"phase"`
	// Open is the turn that holds the queue, Turn its place, Participant
	// who takes it; Queued how many turns wait behind it.
	Open        string `json:"open,omitempty"`
	Turn        int32  `json:"turn,omitempty"`
	Participant string `json:"participant,omitempty"`
	Queued      int32  `json:"queued"`
	// WaitsFor says what the open turn waits for, in words; Approvals
	// and UncertainCalls name it (a question is an approval of kind
	// Question: kubectl approve answer).
	WaitsFor       string     `json:"waitsFor"`
	Approvals      []string   `json:"approvals,omitempty"`
	UncertainCalls []string   `json:"uncertainCalls,omitempty"`
	Since          *time.Time `json:"since,omitempty"`
}

// waitingConversationList is the -o json|yaml document of `list --conversations`.
type waitingConversationList struct {
	Items []waitingConversation `json:"items"`
}

// waitsOnAPerson tells whether conv is held up by a person: its open turn
// is paused for a decision or an answer, or a call of it has an outcome
// nobody knows.
func waitsOnAPerson(conv *exagentv1.Conversation) bool {
	switch conv.Status.Phase {
	case exagentv1.ConversationAwaitingApproval, exagentv1.ConversationUncertain:
		return true
	}
	return false
}

// runConversations is `list --conversations`: one list of the
// Conversations (no field selector exists for their phase: there are few
// of them beside runs), then one read of each waiting one's open turn to
// say what it waits for.
func (o *listOptions) runConversations(ctx context.Context) error {
	var list exagentv1.ConversationList
	if err := o.client.List(ctx, &list, client.InNamespace(o.namespace)); err != nil {
		return fmt.Errorf("listing conversations: %w", err)
	}
	var rows []waitingConversation
	for i := range list.Items {
		conv := &list.Items[i]
		if !waitsOnAPerson(conv) || (o.Agent != "" && conv.Spec.AgentRef.Name != o.Agent) {
			continue
		}
		var open *exagentv1.AgentRun
		if conv.Status.Open != "" {
			open = &exagentv1.AgentRun{}
			if err := o.client.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: conv.Status.Open}, open); err != nil {
				// The row still says the conversation waits; what for is
				// the turn's, which this person may not read.
				_, _ = fmt.Fprintf(o.ErrOut, "warning: reading turn %s of conversation %s/%s: %v\n", conv.Status.Open, conv.Namespace, conv.Name, err)
				open = nil
			}
		}
		rows = append(rows, waitingRow(conv, open))
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Conversation < rows[j].Conversation
	})
	return o.printConversations(rows)
}

// waitingRow is conv's row, with what its open turn (nil when unread)
// waits for.
func waitingRow(conv *exagentv1.Conversation, open *exagentv1.AgentRun) waitingConversation {
	w := waitingConversation{Namespace: conv.Namespace, Conversation: conv.Name, Agent: conv.Spec.AgentRef.Name,
		Phase: string(conv.Status.Phase), Open: conv.Status.Open, Queued: conv.Status.Queued}
	for _, t := range conv.Status.Turns {
		if t.Run == conv.Status.Open {
			w.Turn, w.Participant = t.Index, t.Participant
		}
	}
	if open == nil {
		w.WaitsFor = fmt.Sprintf("turn %s is %s", orNone(conv.Status.Open), w.Phase)
		return w
	}
	st := &open.Status
	if st.Turn != nil {
		w.Turn = st.Turn.Index
		if st.Turn.Participant != "" {
			w.Participant = st.Turn.Participant
		}
	}
	var what []string
	for _, a := range st.Pending() {
		w.Approvals = append(w.Approvals, a.ID)
		if w.Since == nil || a.RequestedAt.Time.Before(*w.Since) {
			t := a.RequestedAt.UTC()
			w.Since = &t
		}
		switch {
		case a.IsQuestion() && st.Turn != nil && st.Turn.Human:
			what = append(what, fmt.Sprintf("participant %s to answer %s", orNone(st.Turn.Participant), a.ID))
		case a.IsQuestion():
			what = append(what, "an answer to question "+a.ID)
		default:
			tool := "?"
			if c := st.Call(a.CallID); c != nil {
				tool = c.Tool
			}
			what = append(what, fmt.Sprintf("a decision on approval %s (%s)", a.ID, tool))
		}
	}
	for _, c := range st.UncertainCalls() {
		w.UncertainCalls = append(w.UncertainCalls, c.ID)
		what = append(what, fmt.Sprintf("a resolve of call %s (%s)", c.ID, c.Tool))
	}
	w.WaitsFor = strings.Join(what, "; ")
	if w.WaitsFor == "" {
		w.WaitsFor = fmt.Sprintf("turn %s is %s", open.Name, orNone(string(st.Phase)))
	}
	return w
}

func (o *listOptions) printConversations(rows []waitingConversation) error {
	if rows == nil {
		rows = []waitingConversation{}
	}
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(waitingConversationList{Items: rows}, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(waitingConversationList{Items: rows})
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	if len(rows) == 0 {
		where := "found"
		if o.namespace != "" {
			where = "in " + o.namespace + " namespace"
		}
		_, err := fmt.Fprintf(o.ErrOut, "No conversations wait on a person %s.\n", where)
		return err
	}
	return printConversationTable(o.Out, rows, o.clock.Now(), o.Output == "wide")
}

// printConversationTable writes the waiting conversations as columns;
// wide adds the Agent and the participant of the open turn.
func printConversationTable(w io.Writer, rows []waitingConversation, now time.Time, wide bool) error {
	tw := printers.GetNewTabWriter(w)
	cols := []string{"NAMESPACE", "CONVERSATION", "PHASE", "TURN", "WAITS FOR", "QUEUED", "SINCE"}
	if wide {
		cols = append(cols, "AGENT", "PARTICIPANT")
	}
	if _, err := fmt.Fprintln(tw, strings.Join(cols, "\t")); err != nil {
		return err
	}
	width := argsWidth
	if wide {
		width = wideArgsWidth
	}
	for _, r := range rows {
		turn := orNone(r.Open)
		if r.Turn > 0 {
			turn = fmt.Sprintf("%s (#%d)", r.Open, r.Turn)
		}
		since := "-"
		if r.Since != nil {
			since = age(*r.Since, now)
		}
		cols := []string{r.Namespace, r.Conversation, r.Phase, turn, truncate(oneLine(r.WaitsFor), width), fmt.Sprint(r.Queued), since}
		if wide {
			cols = append(cols, r.Agent, orNone(r.Participant))
		}
		if _, err := fmt.Fprintln(tw, strings.Join(cols, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}
