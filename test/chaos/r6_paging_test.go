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

package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// R6's paging MCP server: the hostile tenant's Agents name an MCP server
// whose tools/list never ends, each page one tool of just under 8 MiB
// (each answer passes the bound on one answer). Before the listing was
// bounded while read, each listing piled pages up to 512 tools (4 GiB)
// and a few such Agents took the manager past its memory limit; now each
// listing stops at the listing bound (4 MiB) and the Agents say so. The
// scenario's peak RSS bound (rssBound) covers it: the Agents list during
// phase B.
const (
	// pagingAgents of the hostile tenant, each on its own URL path of the
	// paging server: as many listings at once as the tenant's share of
	// the refresher's slots allows.
	pagingAgents = 4
	// pagingDeadline bounds how soon every paging Agent says why it is
	// not Ready: its first listing ends at the bound in well under a second.
	pagingDeadline = 2 * time.Minute
)

// startPaging starts the paging server and the hostile tenant's Agents
// on it; the function it returns checks them, once phase B is over.
func startPaging(t *testing.T, cl *cluster, h *hostile) (check func()) {
	t.Helper()
	srv := mcptest.StartPaging(0, mcptest.PagingDescription)
	t.Cleanup(srv.Close)
	var agents []string
	for i := range pagingAgents {
		name := fmt.Sprintf("paging-%d", i)
		a := &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.s.ns}, Spec: exagentv1.AgentSpec{
			Model: fixture.Scripted(fixture.TextTurn("never reached")),
			Tools: []exagentv1.ToolSpec{{Name: "pages", Description: "a server whose tools/list never ends",
				MCP: &exagentv1.MCPTool{URL: fmt.Sprintf("%s/%d", srv.URL, i), Import: &exagentv1.MCPImport{}}}},
			Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		}}
		if err := cl.c.Create(context.Background(), a); err != nil {
			t.Fatalf("creating the hostile agent %s: %v", name, err)
		}
		agents = append(agents, name)
	}
	return func() { checkPaging(t, cl, h.s.ns, srv, agents) }
}

// checkPaging: every paging Agent is Ready=False MCPServerUnavailable
// naming the listing bound, and no listing was read past the page that
// crossed it.
func checkPaging(t *testing.T, cl *cluster, ns string, srv *mcptest.Paging, agents []string) {
	t.Helper()
	want := fmt.Sprintf("the listing (every page's answer together) is over the %s bound", bounded.Size(mcplist.DefaultMaxListingBytes))
	for _, name := range agents {
		var last string
		err := procs.Poll(pagingDeadline, func() (bool, error) {
			var a exagentv1.Agent
			if err := cl.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &a); err != nil {
				return false, nil
			}
			c := meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionReady)
			if c == nil {
				return false, nil
			}
			last = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, excerpt(c.Message))
			return c.Status == metav1.ConditionFalse && c.Reason == exagentv1.ReasonMCPServerUnavailable && strings.Contains(c.Message, want), nil
		})
		if err != nil {
			t.Errorf("hostile agent %s on the paging MCP server: %s; want Ready=False %s naming %q", name, last,
				exagentv1.ReasonMCPServerUnavailable, want)
		}
	}
	// A page is just under 8 MiB and the bound 4 MiB: the first page of
	// every listing crosses it, and no second page is ever asked for.
	pages, deepest, lists, written := srv.Served()
	if deepest > 1 {
		t.Errorf("the paging MCP server was asked %d pages deep in one listing, want the first page only (it crosses the %s bound)",
			deepest, bounded.Size(mcplist.DefaultMaxListingBytes))
	}
	t.Logf("chaos r6: paging MCP server: %d Agents, %d listings, %d pages served (%d deep at most), %d MiB written",
		len(agents), lists, pages, deepest, written>>20)
}
