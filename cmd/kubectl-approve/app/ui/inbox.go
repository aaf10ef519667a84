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
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// inboxPage is every approval waiting for a person in the page's scope.
type inboxPage struct {
	base
	Rows []inboxRow
	// Since is the list's resourceVersion: the event stream goes on from
	// there, so nothing that happens between the page and the stream is
	// missed.
	Since string
}

// inbox renders the approvals waiting now; the script then follows the
// event stream from the same resourceVersion (events.go).
func (s *Server) inbox(q *request) {
	// The three reads are independent: made at once, the page waits for
	// the slowest, not for their sum.
	var (
		runs   []exagentv1.AgentRun
		rv     string
		err    error
		agents map[client.ObjectKey]*exagentv1.Agent
		wg     sync.WaitGroup
	)
	wg.Go(func() { runs, rv, err = s.listRuns(q.r.Context(), q.c) })
	wg.Go(func() { agents = s.agents(q.r.Context(), q.c) })
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
	s.pages.render(q.w, http.StatusOK, "inbox", inboxPage{base: s.base(q, "Approvals"), Rows: rows, Since: rv})
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
