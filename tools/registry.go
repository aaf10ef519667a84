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

package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/loop"
)

// ErrKindNotSupported is returned for tool kinds this version does not run;
// the controller reports it as ToolKindNotSupported.
var ErrKindNotSupported = errors.New("tool kind not supported")

// SecretGetter reads one key of a Secret in the run's namespace.
type SecretGetter func(ctx context.Context, namespace string, sel exagentv1.SecretKeySelector) (string, error)

// Registry builds tools from the current Agent's specs.
type Registry struct {
	HTTPClient *http.Client
	Builtins   *Builtins
	Secret     SecretGetter
	// MCP knows MCP servers' tools/list (refreshed beside the workers).
	MCP *MCPCatalog
}

// Supported reports whether spec's kind can run, with ErrKindNotSupported otherwise.
func Supported(spec *exagentv1.ToolSpec) error {
	switch spec.Kind() {
	case "http", "builtin", "mcp", "agent":
		return nil
	}
	return fmt.Errorf("tool %q of kind %q: %w", spec.Name, spec.Kind(), ErrKindNotSupported)
}

// Invoke builds the tool for spec and runs call. Anything that fails before
// the tool could act (a missing Secret, an unsupported kind) is a clean failure.
func (r *Registry) Invoke(ctx context.Context, spec *exagentv1.ToolSpec, call Call) loop.ToolResult {
	if spec == nil {
		return failed(call, "tool %q is not defined by the agent", call.Tool)
	}
	if err := Supported(spec); err != nil {
		return failed(call, "%v", err)
	}
	switch {
	case spec.HTTP != nil:
		headers, err := r.headers(ctx, call.RunNamespace, spec.HTTP.Headers)
		if err != nil {
			return failed(call, "%v", err)
		}
		t, err := NewHTTP(spec.HTTP, headers, r.HTTPClient)
		if err != nil {
			return failed(call, "%v", err)
		}
		return t.Invoke(ctx, call)
	case spec.MCP != nil:
		headers, err := r.headers(ctx, call.RunNamespace, spec.MCP.Headers)
		if err != nil {
			return failed(call, "%v", err)
		}
		t, err := NewMCP(spec, headers, r.HTTPClient)
		if err != nil {
			return failed(call, "%v", err)
		}
		return t.Invoke(ctx, call)
	case spec.Agent != nil:
		// A delegation's effect is a child run the controller creates
		// (controllers/agentrun_delegate.go), never a tool invocation.
		return failed(call, "tool %q delegates to agent %q: it is run by the controller, not invoked", spec.Name, spec.Agent.AgentRef.Name)
	case spec.Builtin != nil:
		if r.Builtins == nil {
			return failed(call, "builtin tools are not configured")
		}
		return r.Builtins.Tool(spec.Builtin).Invoke(ctx, call)
	}
	return failed(call, "tool %q has no implementation", spec.Name)
}

// headers resolves Secret-valued headers in the run's namespace (the
// reference has no namespace of its own: a run never reads another
// namespace's Secrets).
func (r *Registry) headers(ctx context.Context, namespace string, hs []exagentv1.SecretHeader) (map[string]string, error) {
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		v, err := r.Secret(ctx, namespace, h.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Name, err)
		}
		out[h.Name] = v
	}
	return out, nil
}

// MCPNeed is what a caller needs of its Agent's MCP listings.
type MCPNeed struct {
	// After: a listing is fresh only when its fetch began at or after this
	// instant (zero: any listing is). A claim passes the instant the run
	// became startable, so a server that changed a tool while the run
	// waited is what the run's calls are bound and re-checked against.
	After time.Time
	// Waiter is woken (MCPCatalog.SetWake, by its Kind) when a refresh it
	// waits for ends.
	Waiter mcplist.Waiter
	// Cached: only what is known; no refresh is asked for (a release).
	Cached bool
}

// MCPWait is one mcp tool whose listing is not fresh for the need: why,
// and when it may be.
type MCPWait struct {
	Tool string
	URL  string
	// State is the refresher's (Err: a listing failed, or the tool's
	// headers could not be resolved).
	mcplist.State
}

// MCPListings returns the listing of every mcp tool of agent that the
// catalog has, fresh or not, and the tools whose listing is not fresh for
// need, in the Agent's order. It never does network IO for a listing: a
// listing that is not fresh is asked of the refresher, which fetches it
// beside the reconcile workers.
func (r *Registry) MCPListings(ctx context.Context, namespace string, agent *exagentv1.AgentSpec, need MCPNeed) (map[string]*loop.MCPListing, []MCPWait) {
	var out map[string]*loop.MCPListing
	var waits []MCPWait
	for i := range agent.Tools {
		t := &agent.Tools[i]
		if t.MCP == nil {
			continue
		}
		if out == nil {
			out = map[string]*loop.MCPListing{}
		}
		if r.MCP == nil {
			waits = append(waits, MCPWait{Tool: t.Name, URL: t.MCP.URL, State: mcplist.State{Err: errors.New("mcp tools are not configured")}})
			continue
		}
		headers, err := r.headers(ctx, namespace, t.MCP.Headers)
		if err != nil {
			waits = append(waits, MCPWait{Tool: t.Name, URL: t.MCP.URL, State: mcplist.State{Err: fmt.Errorf("MCP server %s: %w", t.MCP.URL, err)}})
			continue
		}
		st := r.MCP.get(namespace, t.MCP.URL, headers, need)
		if st.Listing != nil {
			out[t.Name] = st.Listing
		}
		if !st.Fresh {
			if errors.Is(st.Err, mcplist.ErrFull) {
				st.Err = fmt.Errorf("MCP server %s: %w", t.MCP.URL, st.Err)
			}
			waits = append(waits, MCPWait{Tool: t.Name, URL: t.MCP.URL, State: st.State})
		}
	}
	return out, waits
}
