package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/loop"
)

// ErrKindNotSupported is returned for tool kinds this version does not run
// (mcp, agent); the controller reports it as ToolKindNotSupported.
var ErrKindNotSupported = errors.New("tool kind not supported")

// SecretGetter reads one key of a Secret in the run's namespace.
type SecretGetter func(ctx context.Context, namespace string, sel exagentv1.SecretKeySelector) (string, error)

// Registry builds tools from the current Agent's specs.
type Registry struct {
	HTTPClient *http.Client
	Builtins   *Builtins
	Secret     SecretGetter
}

// Supported reports whether spec's kind can run, with ErrKindNotSupported otherwise.
func Supported(spec *exagentv1.ToolSpec) error {
	switch spec.Kind() {
	case "http", "builtin":
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
		headers := make(map[string]string, len(spec.HTTP.Headers))
		for _, h := range spec.HTTP.Headers {
			v, err := r.Secret(ctx, call.RunNamespace, h.ValueFrom)
			if err != nil {
				return failed(call, "header %s: %v", h.Name, err)
			}
			headers[h.Name] = v
		}
		t, err := NewHTTP(spec.HTTP, headers, r.HTTPClient)
		if err != nil {
			return failed(call, "%v", err)
		}
		return t.Invoke(ctx, call)
	case spec.Builtin != nil:
		if r.Builtins == nil {
			return failed(call, "builtin tools are not configured")
		}
		return r.Builtins.Tool(spec.Builtin).Invoke(ctx, call)
	}
	return failed(call, "tool %q has no implementation", spec.Name)
}
