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

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestCheckToolParameters: a schema the validator compiles passes, one it
// refuses fails with the same *SchemaError a run's Env would refuse the
// Agent with; an agent tool with no parameters has the delegation default.
func TestCheckToolParameters(t *testing.T) {
	tests := map[string]struct {
		tool    exagentv1.ToolSpec
		wantErr bool
	}{
		"an object schema": {tool: MakeAgent().HTTPTool("pay", false).Spec().Tools[0]},
		"no parameters":    {tool: exagentv1.ToolSpec{Name: "x", HTTP: &exagentv1.HTTPTool{URL: "http://h"}}},
		"a delegation with no parameters": {tool: exagentv1.ToolSpec{Name: "d",
			Agent: &exagentv1.AgentTool{AgentRef: exagentv1.LocalObjectReference{Name: "child"}}}},
		"a pattern that does not compile": {tool: MakeAgent().HTTPTool("pay", false).
			Schema("pay", `{"type":"object","properties":{"id":{"type":"string","pattern":"(["}}}`).Spec().Tools[0], wantErr: true},
		"a remote $ref": {tool: MakeAgent().HTTPTool("pay", false).
			Schema("pay", `{"type":"object","$ref":"https://example.com/s.json"}`).Spec().Tools[0], wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := CheckToolParameters(&tc.tool)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CheckToolParameters = %v, want error %v", err, tc.wantErr)
			}
			agent := MakeAgent().Spec()
			agent.Tools = []exagentv1.ToolSpec{tc.tool}
			_, envErr := NewEnv(EnvInput{RunUID: runUID, Agent: agent, Run: MakeRun().Spec()})
			if (envErr != nil) != tc.wantErr {
				t.Errorf("NewEnv = %v: the check and the run disagree", envErr)
			}
			var se *SchemaError
			if tc.wantErr && !errors.As(err, &se) {
				t.Errorf("error %T %v, want a *SchemaError", err, err)
			}
		})
	}
}

// TestCheckMCPTool: a named tool is usable, missing or offered with a
// schema the validator refuses, as a run's Env sees it; an import of
// every tool takes those under a valid visible name.
func TestCheckMCPTool(t *testing.T) {
	listing := &MCPListing{Tools: []MCPToolInfo{
		{Name: "echo", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "broken", InputSchema: []byte(`{"type":"object","properties":{"a":{"pattern":"(["}}}`)},
		{Name: "no schema"},
	}}
	one := func(tool string) exagentv1.ToolSpec {
		return exagentv1.ToolSpec{Name: "t", MCP: &exagentv1.MCPTool{URL: "http://mcp", Tool: tool}}
	}
	tests := map[string]struct {
		tool exagentv1.ToolSpec
		want MCPToolCheck
	}{
		"an offered tool": {tool: one("echo"), want: MCPToolCheck{Usable: []string{"echo"}}},
		"a missing tool":  {tool: one("gone"), want: MCPToolCheck{Missing: []string{"gone"}}},
		"a broken schema": {tool: one("broken"), want: MCPToolCheck{BadSchemas: []MCPSchemaProblem{{Tool: "broken"}}}},
		"a named import": {tool: exagentv1.ToolSpec{Name: "srv", MCP: &exagentv1.MCPTool{URL: "http://mcp",
			Import: &exagentv1.MCPImport{Tools: []string{"echo", "gone"}}}}, want: MCPToolCheck{Usable: []string{"echo"}, Missing: []string{"gone"}}},
		"an import of every tool": {tool: exagentv1.ToolSpec{Name: "srv", MCP: &exagentv1.MCPTool{URL: "http://mcp",
			Import: &exagentv1.MCPImport{}}}, want: MCPToolCheck{Usable: []string{"echo"}, BadSchemas: []MCPSchemaProblem{{Tool: "broken"}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := CheckMCPTool(&tc.tool, listing)
			for i := range got.BadSchemas {
				if got.BadSchemas[i].Err == nil {
					t.Errorf("%s: no error", got.BadSchemas[i].Tool)
				}
				got.BadSchemas[i].Err = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckMCPTool (-want +got):\n%s", diff)
			}
		})
	}
}
