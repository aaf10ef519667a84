package tools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/egress"
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
	// MCP reads and caches MCP servers' tools/list.
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

// MCPListings reads the tools/list of every mcp tool of agent, from the
// cache when younger than maxAge (0: always ask; a claim does). The error
// names the first server that could not be asked; the map then holds, for
// those servers, the last listing read when there is one, for callers that
// start no IO.
func (r *Registry) MCPListings(ctx context.Context, namespace string, agent *exagentv1.AgentSpec, maxAge time.Duration) (map[string]*loop.MCPListing, error) {
	// The listing is dialled under the namespace's egress policy, like the calls.
	ctx = egress.WithNamespace(ctx, namespace)
	var out map[string]*loop.MCPListing
	var first error
	for i := range agent.Tools {
		t := &agent.Tools[i]
		if t.MCP == nil {
			continue
		}
		if out == nil {
			out = map[string]*loop.MCPListing{}
		}
		if r.MCP == nil {
			first = cmp.Or(first, fmt.Errorf("tool %q: mcp tools are not configured", t.Name))
			continue
		}
		headers, err := r.headers(ctx, namespace, t.MCP.Headers)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("tool %q: %w", t.Name, err))
			continue
		}
		l, stale, err := r.MCP.List(ctx, t.MCP.URL, headers, maxAge)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("tool %q: %w", t.Name, err))
			l = stale
		}
		if l != nil {
			out[t.Name] = l
		}
	}
	return out, first
}
