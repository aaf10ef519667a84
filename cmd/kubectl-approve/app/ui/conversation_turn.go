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

package ui

import (
	"context"
	"fmt"
	"net/url"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/turn"
)

// turnOf is what the thread shows of run, turn n of its conversation
// (open names the turn that holds the queue): who asked what, then what
// the turn said and did — only its own part: a turn's transcript starts
// with every earlier turn's messages, shown under those turns.
func turnOf(ctx context.Context, c client.Client, run *exagentv1.AgentRun, n int, open string, agent *exagentv1.Agent) turnView {
	st := &run.Status
	v := turnView{N: n, Run: run.Name, RunUID: string(run.UID), Revision: st.Revision, Agent: run.Spec.AgentRef.Name,
		Requester: turn.Requester(run), Input: value(run.Spec.Input, nil, nil), Phase: string(st.Phase), Reason: st.Reason, Message: st.Message,
		Open: run.Name == open, Started: st.Turn != nil}
	// The participant is said when it is not just the Agent's name (a
	// conversation without participants names its turns by the Agent).
	if ref := run.Spec.ConversationRef; ref != nil {
		v.Participant = ref.Participant
	}
	if t := st.Turn; t != nil {
		v.Human = t.Human
		if t.Participant != "" {
			v.Participant = t.Participant
		}
	}
	if v.Participant == v.Agent && !v.Human {
		v.Participant = ""
	}
	own := ownMessages(run)
	values := resolveValues(ctx, c, run, own.msgs, nil)
	v.Messages, v.SealedOwn = messagesOf(own.msgs, own.first, values), own.sealed
	v.Pending = wholeRows(run, rowsOf(run, agent), values)
	for i := range st.Calls {
		cv := callOf(&st.Calls[i], values)
		v.Calls = append(v.Calls, cv)
		if st.Calls[i].State == exagentv1.CallUncertain {
			v.Uncertain = append(v.Uncertain, cv)
		}
	}
	for _, a := range st.Approvals {
		if a.State == exagentv1.ApprovalPending {
			continue
		}
		av := approvalView{ID: a.ID, CallID: a.CallID, State: string(a.State), Decision: a.Decision, Reason: a.Reason}
		if a.Actor != nil {
			av.Actor = a.Actor.Username
		}
		for _, vote := range a.Votes {
			av.Votes = append(av.Votes, vote.Actor.Username)
		}
		v.Decided = append(v.Decided, av)
	}
	return v
}

// ownPart is the part of a turn's transcript in its status that the turn
// wrote: its messages after its own user message (the input, shown from
// the spec), numbered from first; sealed counts its own messages that
// are sealed already.
type ownPart struct {
	msgs   []exagentv1.Message
	first  int64
	sealed int64
}

// ownMessages is run's own part of its hot transcript. A turn that has
// not started holds a provisional history (replaced when it continues
// the conversation): none of it is the turn's yet.
func ownMessages(run *exagentv1.AgentRun) ownPart {
	st := &run.Status
	if st.Turn == nil {
		return ownPart{}
	}
	var sealed int64
	if st.Transcript != nil {
		sealed = st.Transcript.Messages
	}
	// history[i] is message number sealed+i of the logical transcript;
	// the turn's own start at its firstMessage.
	start := st.Turn.FirstMessage - sealed
	out := ownPart{}
	if start < 0 {
		out.sealed, start = -start, 0
	}
	if start > int64(len(st.History)) {
		return out
	}
	msgs := st.History[start:]
	skip := 0
	// A person's turn has no input message: what its people answered is
	// its first message.
	if out.sealed == 0 && !st.Turn.Human {
		// Up to the turn's own user message (its input): the first
		// turn's part starts with the Agent's instructions.
		for skip < len(msgs) && msgs[skip].Role != exagentv1.RoleUser {
			skip++
		}
		if skip < len(msgs) {
			skip++
		} else {
			skip = 0
		}
	}
	out.msgs, out.first = msgs[skip:], sealed+start+int64(skip)
	return out
}

// threadFlash is the result ?said= (a reply's new turn) or ?decided= (a
// decision made on the thread) names, read back from the store: who the
// apiserver recorded, not what the page sent.
func (s *Server) threadFlash(q *request, conv *exagentv1.Conversation, names []string) *flash {
	query := q.r.URL.Query()
	isTurn := func(name string) bool {
		for _, n := range names {
			if n == name {
				return true
			}
		}
		return false
	}
	if said := query.Get("said"); said != "" && isTurn(said) {
		run := &exagentv1.AgentRun{}
		if err := q.c.Get(q.r.Context(), client.ObjectKey{Namespace: conv.Namespace, Name: said}, run); err != nil {
			return nil
		}
		where := "it runs once every earlier turn has ended"
		if run.Status.Turn != nil || run.Status.Phase.IsTerminal() {
			where = "it is " + string(run.Status.Phase)
		}
		return &flash{Kind: "ok", Text: fmt.Sprintf("Added turn %s, asked by %s, for agent %s (%s).", run.Name, turn.Requester(run), run.Spec.AgentRef.Name, where)}
	}
	if decided := query.Get("decided"); decided != "" {
		d := &exagentv1.ApprovalDecision{}
		if err := q.c.Get(q.r.Context(), client.ObjectKey{Namespace: conv.Namespace, Name: decided}, d); err != nil || !isTurn(d.Spec.RunRef.Name) {
			return nil
		}
		f := decisionFlash(d)
		f.Text = "Turn " + d.Spec.RunRef.Name + ": " + f.Text
		return f
	}
	return nil
}

// threadURL is the thread of conversation ns/name, at the turn run when
// given, with query.
func threadURL(ns, name, run string, query url.Values) string {
	u := url.URL{Path: "/conversations/" + ns + "/" + name, RawQuery: query.Encode()}
	if run != "" {
		u.Fragment = "turn-" + run
	}
	return u.String()
}
