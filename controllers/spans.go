package controllers

import (
	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/loop"
)

// endChat ends a chat span with the response's token usage.
func endChat(end telemetry.End, resp *loop.ModelResponse, err error) {
	switch {
	case err != nil:
		end("Failed", err)
	case resp != nil:
		end("Succeeded", nil, telemetry.Tokens(resp.PromptTokens, resp.CompletionTokens)...)
	default:
		end("Failed", nil)
	}
}

// toolKind is the GenAI tool type of a tool: its implementation kind.
func toolKind(spec *exagentv1.ToolSpec) string {
	if spec == nil {
		return "unknown"
	}
	return spec.Kind()
}
