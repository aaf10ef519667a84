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
	"net/http"
	"sort"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// inboxPage is every approval waiting for a person in the page's scope.
type inboxPage struct {
	base
	Rows []inboxRow
	// Since is the list's resourceVersion: the event stream goes on from
	// there, so nothing that happens between the page and the stream is
	// missed.
	Since string
	// Conversations are those held up by a person, as of the page's load.
	Conversations []waitingConversation
}

// waitingConversation is a conversation whose open turn waits for a
// person: its later turns wait too.
type waitingConversation struct {
	Namespace, Name, Agent, Phase, Open string
	Queued                              int32
}

// inbox renders the approvals waiting now; the script then follows the
// event stream from the same resourceVersion (events.go).
func (s *Server) inbox(q *request) {
	// The four reads are independent: made at once, the page waits for
	// the slowest, not for their sum.
	var (
		runs   []exagentv1.AgentRun
		rv     string
		err    error
		agents map[client.ObjectKey]*exagentv1.Agent
		convs  []waitingConversation
		wg     sync.WaitGroup
	)
	wg.Go(func() { runs, rv, err = s.listRuns(q.r.Context(), q.c) })
	wg.Go(func() { agents = s.agents(q.r.Context(), q.c) })
	wg.Go(func() { convs = s.waitingConversations(q.r.Context(), q.c) })
	wg.Go(func() { s.who(q) })
	wg.Wait()
	if err != nil {
		s.problem(q, err)
		return
	}
	var rows []inboxRow
	for i := range runs {
		rows = append(rows, rowsOf(&runs[i], agents[client.ObjectKey{Namespace: runs[i].Namespace, Name: runs[i].Spec.AgentRef.Name}])...)
	}
	sortRows(rows)
	s.pages.render(q.w, http.StatusOK, "inbox", inboxPage{base: s.base(q, "Approvals"), Rows: rows, Since: rv, Conversations: convs})
}

// listOpts is the inbox's scope.
func (s *Server) listOpts() []client.ListOption {
	if s.cfg.AllNamespaces {
		return nil
	}
	return []client.ListOption{client.InNamespace(s.cfg.Namespace)}
}

// listRuns lists the runs of the inbox's scope with their resourceVersion.
func (s *Server) listRuns(ctx context.Context, c client.Client) ([]exagentv1.AgentRun, string, error) {
	list := &exagentv1.AgentRunList{}
	if err := c.List(ctx, list, s.listOpts()...); err != nil {
		return nil, "", err
	}
	return list.Items, list.ResourceVersion, nil
}

// agents are the Agents of the scope, for who may decide; none when the
// person may not list them (the rows then name the RBAC verb alone).
func (s *Server) agents(ctx context.Context, c client.Client) map[client.ObjectKey]*exagentv1.Agent {
	out := map[client.ObjectKey]*exagentv1.Agent{}
	list := &exagentv1.AgentList{}
	if err := c.List(ctx, list, s.listOpts()...); err != nil {
		return out
	}
	for i := range list.Items {
		out[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	return out
}

// waitingConversations are the conversations of the scope whose open
// turn waits for a decision, an answer or a resolve; none when the
// person may not list conversations (or the kind is not installed).
func (s *Server) waitingConversations(ctx context.Context, c client.Client) []waitingConversation {
	list := &exagentv1.ConversationList{}
	if err := c.List(ctx, list, s.listOpts()...); err != nil {
		return nil
	}
	var out []waitingConversation
	for i := range list.Items {
		conv := &list.Items[i]
		switch conv.Status.Phase {
		case exagentv1.ConversationAwaitingApproval, exagentv1.ConversationUncertain:
			out = append(out, waitingConversation{Namespace: conv.Namespace, Name: conv.Name, Agent: conv.Spec.AgentRef.Name,
				Phase: string(conv.Status.Phase), Open: conv.Status.Open, Queued: conv.Status.Queued})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
