package controllers

import (
	"context"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/tools"
)

// mcpRetry is how soon a run whose MCP server could not be listed tries again.
const mcpRetry = 5 * time.Second

// mcpListings reads the tools/list of the run's Agent's mcp tools for the
// engine (DESIGN.md §11). A run about to be claimed (no IO of the current
// attempt has begun) asks every server again, so a schema that changed
// while it waited is what its calls are bound and re-checked against;
// otherwise a listing younger than the catalog's TTL is reused. unavailable
// is set when a server could not be asked where a claim needs it: the run
// then starts no IO and tries again shortly. Elsewhere the last listing
// read stands in (it only has to check calls already bound).
func (r *AgentRunReconciler) mcpListings(ctx context.Context, sc *scope) (listings map[string]*loop.MCPListing, unavailable string) {
	if r.Tools == nil || !hasMCP(&sc.agent.Spec) {
		return nil, ""
	}
	maxAge := tools.DefaultMCPListTTL
	if startable(sc.status.Phase) {
		maxAge = 0
	}
	listings, err := r.Tools.MCPListings(ctx, sc.key.Namespace, &sc.agent.Spec, maxAge)
	if err != nil && (startable(sc.status.Phase) || len(listings) < countMCP(&sc.agent.Spec)) {
		sc.requeueAfter = mcpRetry
		return listings, err.Error() + "; the run starts no tool or model IO until the server answers tools/list"
	}
	return listings, ""
}

func hasMCP(a *exagentv1.AgentSpec) bool { return countMCP(a) > 0 }

func countMCP(a *exagentv1.AgentSpec) int {
	n := 0
	for i := range a.Tools {
		if a.Tools[i].MCP != nil {
			n++
		}
	}
	return n
}

// releaseListings gives the release the mcp listings a model answer it
// records is checked against: cached, or the last read when the server is
// down (a release starts no IO, so a stale listing is enough to admit the
// calls the next owner will re-check at its claim).
func (r *AgentRunReconciler) releaseListings(ctx context.Context, namespace string, agent *exagentv1.AgentSpec) map[string]*loop.MCPListing {
	if r.Tools == nil || !hasMCP(agent) {
		return nil
	}
	listings, _ := r.Tools.MCPListings(ctx, namespace, agent, tools.DefaultMCPListTTL)
	return listings
}
