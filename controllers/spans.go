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

package controllers

import (
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
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
