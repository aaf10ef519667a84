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

package webhook_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/webhook"
)

func TestValidateAgentMCP(t *testing.T) {
	mcpTool := func(name string, m exagentv1.MCPTool) exagentv1.ToolSpec {
		if m.URL == "" {
			m.URL = "http://127.0.0.1:9000/mcp"
		}
		return exagentv1.ToolSpec{Name: name, MCP: &m}
	}
	withTools := func(ts ...exagentv1.ToolSpec) *exagentv1.Agent {
		return agent(func(a *exagentv1.Agent) {
			a.Spec.Tools = append(a.Spec.Tools, ts...)
			a.Spec.Policy.Rules = append(a.Spec.Policy.Rules, exagentv1.PolicyRule{
				Tools: []string{"gh_*"}, Action: exagentv1.PolicyAllow, When: "tool.annotations.readOnlyHint == true"})
		})
	}
	cases := map[string]struct {
		agent *exagentv1.Agent
		want  []string
	}{
		"one tool, an import of all and one of a list": {agent: withTools(
			mcpTool("search", exagentv1.MCPTool{Tool: "web_search", Timeout: "5m", Idempotent: true}),
			mcpTool("gh", exagentv1.MCPTool{Import: &exagentv1.MCPImport{}}),
			mcpTool("fs", exagentv1.MCPTool{Import: &exagentv1.MCPImport{Prefix: "files-", Tools: []string{"read", "list"}}}),
		)},
		"credentials in the URL": {agent: withTools(mcpTool("s", exagentv1.MCPTool{URL: "https://u:p@mcp.example/mcp"})),
			want: []string{"FieldValueInvalid spec.tools[1].mcp.url"}},
		"not http": {agent: withTools(mcpTool("s", exagentv1.MCPTool{URL: "ftp://mcp.example/"})),
			want: []string{"FieldValueInvalid spec.tools[1].mcp.url"}},
		"parameters are the server's": {agent: withTools(func() exagentv1.ToolSpec {
			t := mcpTool("s", exagentv1.MCPTool{})
			t.Parameters = fixture.RawJSON(`{"type":"object"}`)
			return t
		}()), want: []string{"FieldValueForbidden spec.tools[1].parameters"}},
		"tool and import": {agent: withTools(mcpTool("s", exagentv1.MCPTool{Tool: "x", Import: &exagentv1.MCPImport{}})),
			want: []string{"FieldValueForbidden spec.tools[1].mcp.import"}},
		"timeout Never": {agent: withTools(mcpTool("s", exagentv1.MCPTool{Timeout: exagentv1.Never})),
			want: []string{"FieldValueInvalid spec.tools[1].mcp.timeout"}},
		"an imported name that is not a valid tool name": {agent: withTools(
			mcpTool("s", exagentv1.MCPTool{Import: &exagentv1.MCPImport{Tools: []string{"read.file"}}})),
			want: []string{"FieldValueInvalid spec.tools[1].mcp.import.tools[0]"}},
		"a tool name inside an import's prefix": {agent: withTools(
			mcpTool("gh", exagentv1.MCPTool{Import: &exagentv1.MCPImport{}}),
			mcpTool("gh_issues", exagentv1.MCPTool{})),
			want: []string{"FieldValueInvalid spec.tools[1].mcp.import.prefix"}},
		"overlapping prefixes": {agent: withTools(
			mcpTool("a", exagentv1.MCPTool{Import: &exagentv1.MCPImport{Prefix: "gh"}}),
			mcpTool("b", exagentv1.MCPTool{Import: &exagentv1.MCPImport{Prefix: "gh_"}})),
			want: []string{"FieldValueInvalid spec.tools[1].mcp.import.prefix"}},
		"a bad Secret reference": {agent: withTools(mcpTool("s", exagentv1.MCPTool{Headers: []exagentv1.SecretHeader{{
			Name: "Authorization", ValueFrom: exagentv1.SecretKeySelector{Name: "ns/other", Key: "token"}}}})),
			want: []string{"FieldValueInvalid spec.tools[1].mcp.headers[0].valueFrom.name"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range webhook.ValidateAgent(tc.agent, nil) {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
