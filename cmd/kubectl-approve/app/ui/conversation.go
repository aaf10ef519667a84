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
	"net/http"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/turn"
)

// A conversation's page is its thread: the turns in order, each with who
// asked what and what the turn's Agent said and did, the open turn's
// requests decidable right there (the run page's cards, cards.go), and a
// reply box that adds a turn as the person (say.go). A conversation may
// hold a thousand turns: the page shows maxThreadTurns of them, the
// latest unless ?until=N names the last one to show, and reads only
// those (the rest is listed by name alone).

const (
	// maxThreadTurns bounds the turns one page of a thread shows.
	maxThreadTurns = 20
	// maxTurnReads bounds the turns read at once.
	maxTurnReads = 4
)

// threadView is a conversation's page.
type threadView struct {
	base
	Namespace, Name, UID, Agent string
	Phase, Open                 string
	Queued                      int32
	FollowUps, DoubleText       string
	MaxTurns                    int32
	// Total is how many turns there are; the page shows Turns, numbered
	// First..Last. Earlier and Later are the ?until= of the pages before
	// and after (0: none).
	Total, First, Last int
	Earlier, Later     int
	Turns              []turnView
	// Reply is the reply box: who may take the turn, and what was typed
	// before a refusal.
	CanReply     bool
	ReplyNote    string
	Participants []participantChoice
	Reply        replyState
	Flash        *flash
	// Form keeps what was typed in a decision card before a refusal.
	Form formState
}

// participantChoice is one Agent that may take the reply's turn.
type participantChoice struct {
	Value, Label string
	Selected     bool
}

// replyState is what the person typed in the reply box.
type replyState struct {
	Text, Participant string
}

// turnView is one turn: who asked what, what its Agent said and did.
type turnView struct {
	N                      int
	Run, RunUID            string
	Revision               int64
	Agent, Participant     string
	Requester, Input       string
	Phase, Reason, Message string
	Open, Started, Human   bool
	Messages               []messageView
	// SealedOwn is how many of the turn's own messages are sealed into
	// segments: the thread shows the tail in status, the run page all.
	SealedOwn int64
	Calls     []callView
	Decided   []approvalView
	Pending   []inboxRow
	Uncertain []callView
	// Error says why the turn could not be read (the rest still shows).
	Error string
}

// conversationPage renders the thread the path names.
func (s *Server) conversationPage(q *request) {
	s.renderThread(q, http.StatusOK, q.r.PathValue("namespace"), q.r.PathValue("name"), nil, formState{}, replyState{})
}

// renderThread reads conversation ns/name and its turns and renders the
// thread, with f (a reply's or a decision's result) on top and what was
// typed kept in the forms.
func (s *Server) renderThread(q *request, code int, ns, name string, f *flash, form formState, reply replyState) {
	ctx := q.r.Context()
	conv := &exagentv1.Conversation{}
	if err := q.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, conv); err != nil {
		if f != nil {
			s.pages.render(q.w, code, "problem", problemPage{base: s.base(q, "Problem"),
				Message: f.Text + " (The conversation could not be read again: " + s.cfg.explain(err) + ")"})
			return
		}
		s.problem(q, err)
		return
	}
	v := threadView{base: s.base(q, "Conversation "+conv.Name), Namespace: conv.Namespace, Name: conv.Name, UID: string(conv.UID),
		Agent: conv.Spec.AgentRef.Name, Phase: string(conv.Status.Phase), Open: conv.Status.Open, Queued: conv.Status.Queued,
		FollowUps: string(conv.Spec.FollowUps), DoubleText: string(conv.Spec.DoubleText), Flash: f, Form: form, Reply: reply}
	if m := conv.Spec.Limits.MaxTurns; m != nil {
		v.MaxTurns = *m
	}
	names, err := turnNames(ctx, q.c, conv)
	if err != nil {
		if f != nil {
			v.Flash = &flash{Kind: "error", Text: f.Text + " (The turns could not be listed: " + s.cfg.explain(err) + ")"}
		} else {
			v.Flash = &flash{Kind: "error", Text: "The turns could not be listed: " + s.cfg.explain(err)}
		}
	}
	v.Total = len(names)
	v.window(q.r.URL.Query().Get("until"))
	if v.Total > 0 {
		v.Turns = s.readTurns(ctx, q.c, conv, names[v.First-1:v.Last], v.First)
	}
	if v.Flash == nil {
		v.Flash = s.threadFlash(q, conv, names)
	}
	v.replyBox(conv)
	s.pages.render(q.w, code, "conversation", v)
}

// window picks the turns shown: maxThreadTurns ending at until (the
// latest when it is not a turn's number).
func (v *threadView) window(until string) {
	if v.Total == 0 {
		return
	}
	v.Last = v.Total
	if n, err := strconv.Atoi(until); err == nil && n >= 1 && n < v.Total {
		v.Last = n
		v.Later = min(n+maxThreadTurns, v.Total)
	}
	v.First = max(1, v.Last-maxThreadTurns+1)
	if v.First > 1 {
		v.Earlier = v.First - 1
	}
}

// replyBox says whether the page offers a reply, with what note, and
// which Agents may take the turn.
func (v *threadView) replyBox(conv *exagentv1.Conversation) {
	switch {
	case conv.Status.Phase == exagentv1.ConversationEnded:
		v.ReplyNote = "The conversation has ended: it takes no more turns."
		return
	case v.MaxTurns > 0 && int32(v.Total) >= v.MaxTurns:
		v.ReplyNote = fmt.Sprintf("The conversation has taken its %d turns (spec.limits.maxTurns): it takes no more.", v.MaxTurns)
		return
	}
	v.CanReply = true
	switch {
	case conv.Spec.Suspend:
		v.ReplyNote = "The conversation is suspended: your turn waits until it is resumed."
	case conv.Status.Open != "" && conv.Spec.DoubleText == exagentv1.DoubleTextReject:
		v.ReplyNote = "Turn " + conv.Status.Open + " is open, and this conversation refuses a turn while one is (doubleText Reject): the apiserver will say so."
	case conv.Status.Open != "" && conv.Spec.DoubleText == exagentv1.DoubleTextInterrupt:
		v.ReplyNote = "Turn " + conv.Status.Open + " is open: your turn ends it (doubleText Interrupt), then runs."
	case conv.Status.Open != "":
		v.ReplyNote = "Turn " + conv.Status.Open + " is open: your turn runs once every earlier turn has ended."
	default:
		v.ReplyNote = "Your turn runs at once, as you: the conversation's followUps say who may add one."
	}
	for _, p := range turn.Choices(conv) {
		c := participantChoice{Value: p.Name, Selected: p.Name == v.Reply.Participant}
		switch {
		case p.Name == "":
			c.Label = "agent " + p.Agent + " (the conversation's)"
		case p.Human:
			c.Label = p.Name + ": a question to " + strings.Join(p.People, ", ")
		default:
			c.Label = p.Name + " (agent " + p.Agent + ")"
		}
		v.Participants = append(v.Participants, c)
	}
	if len(v.Participants) < 2 {
		v.Participants = nil // nobody to choose: the agentRef takes it
	}
}

// turnNames are the turns of conv in order, from their metadata alone
// (one list, however long the conversation: nothing of their status).
// The exact conversation name is checked when a turn is read.
func turnNames(ctx context.Context, c client.Client, conv *exagentv1.Conversation) ([]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunList"))
	if err := c.List(ctx, list, client.InNamespace(conv.Namespace), turn.Of(conv.Name)); err != nil {
		return nil, fmt.Errorf("listing the turns of conversation %s: %w", conv.Name, err)
	}
	runs := make([]exagentv1.AgentRun, len(list.Items))
	for i := range list.Items {
		runs[i].ObjectMeta = list.Items[i].ObjectMeta
		runs[i].Spec.ConversationRef = &exagentv1.ConversationRef{Name: conv.Name}
	}
	runs = turn.Sorted(conv.Name, runs)
	names := make([]string, len(runs))
	for i := range runs {
		names[i] = runs[i].Name
	}
	return names, nil
}

// readTurns reads the named turns (numbered from first), a few at once,
// and the Agents they ran (who may decide their requests).
func (s *Server) readTurns(ctx context.Context, c client.Client, conv *exagentv1.Conversation, names []string, first int) []turnView {
	out := make([]turnView, len(names))
	runs := make([]*exagentv1.AgentRun, len(names))
	sem := make(chan struct{}, maxTurnReads)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			run := &exagentv1.AgentRun{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: name}, run); err != nil {
				out[i] = turnView{N: first + i, Run: name, Error: "This turn could not be read: " + s.cfg.explain(err)}
				return
			}
			if run.Spec.ConversationRef == nil || run.Spec.ConversationRef.Name != conv.Name {
				out[i] = turnView{N: first + i, Run: name, Error: "This run is not a turn of " + conv.Name + " (its label says so, its spec does not)."}
				return
			}
			runs[i] = run
		})
	}
	wg.Wait()
	agents := map[string]*exagentv1.Agent{}
	for i, run := range runs {
		if run == nil {
			continue
		}
		name := run.Spec.AgentRef.Name
		agent, ok := agents[name]
		if !ok && (run.Status.Phase == exagentv1.PhaseAwaitingApproval) {
			agent = &exagentv1.Agent{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, agent); err != nil {
				agent = nil
			}
			agents[name] = agent
		}
		out[i] = turnOf(ctx, c, run, first+i, conv.Status.Open, agent)
	}
	return out
}
