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

package loop

import exagentv1 "github.com/exagent-io/exagent/api/v1beta1"

// The Agent controller says whether an Agent's tools work (its
// status.tools) with the very functions a run's Env is built with, so an
// Agent reported ready is one whose schemas a run can compile, and a
// schema reported broken is one a run would refuse.

// CheckToolParameters compiles the parameters schema of a tool not of
// kind mcp as a run does (NewEnv): nil, or why it cannot be used (a
// *SchemaError for a schema the validator refuses).
func CheckToolParameters(t *exagentv1.ToolSpec) error {
	_, _, err := toolParameters(t)
	return err
}

// MCPToolCheck is what a run would make of an mcp Agent tool against its
// server's listing.
type MCPToolCheck struct {
	// Usable are the server's names of the tools a call can reach.
	Usable []string
	// Missing are the server's names of tools the Agent names that the
	// listing does not offer.
	Missing []string
	// BadSchemas are the tools the listing offers with an input schema the
	// validator refuses, in listing order.
	BadSchemas []MCPSchemaProblem
}

// MCPSchemaProblem is one listed tool whose input schema cannot be used.
type MCPSchemaProblem struct {
	Tool string
	Err  error
}

// CheckMCPTool resolves the mcp Agent tool t against l (the server's
// tools/list) as a run's Env does: the tools it names, or for an import
// of every tool those the listing offers under a valid name, each with
// its input schema compiled.
func CheckMCPTool(t *exagentv1.ToolSpec, l *MCPListing) MCPToolCheck {
	var out MCPToolCheck
	for _, x := range expandMCP(t, l) {
		server := x.spec.MCP.Tool
		if x.info == nil {
			out.Missing = append(out.Missing, server)
			continue
		}
		if _, _, err := mcpInputSchema(x.info); err != nil {
			out.BadSchemas = append(out.BadSchemas, MCPSchemaProblem{Tool: server, Err: err})
			continue
		}
		out.Usable = append(out.Usable, server)
	}
	return out
}
