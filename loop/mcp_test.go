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
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func mcpListing(tools ...MCPToolInfo) *MCPListing { return &MCPListing{Tools: tools} }

func mcpInfo(name, schema string, readOnly bool) MCPToolInfo {
	return MCPToolInfo{Name: name, Description: name + " it", InputSchema: json.RawMessage(schema),
		Annotations: &MCPAnnotations{ReadOnlyHint: &readOnly}}
}

func mcpEnv(t *testing.T, tools []exagentv1.ToolSpec, listings map[string]*MCPListing, rules ...exagentv1.PolicyRule) *Env {
	t.Helper()
	agent := MakeAgent().Spec()
	agent.Tools = tools
	agent.Policy = exagentv1.PolicySpec{Default: exagentv1.PolicyAsk, Rules: rules}
	env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", Agent: agent, AgentGeneration: 1, Run: MakeRun().Spec(), MCP: listings})
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return env
}

const textSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// TestMCPExpansion: one tool, an import of a list and an import of all
// resolve to model-visible tools with the server's schemas; a named tool
// the server lacks is unavailable, not invisible to the engine.
func TestMCPExpansion(t *testing.T) {
	listing := mcpListing(mcpInfo("echo", textSchema, true), mcpInfo("rm", `{"type":"object"}`, false),
		mcpInfo("bad.name", `{"type":"object"}`, true))
	tools := []exagentv1.ToolSpec{
		{Name: "say", Description: "Say it.", MCP: &exagentv1.MCPTool{URL: "http://a/mcp", Tool: "echo"}},
		{Name: "fs", MCP: &exagentv1.MCPTool{URL: "http://b/mcp", Import: &exagentv1.MCPImport{Prefix: "fs_", Tools: []string{"rm", "gone"}}}},
		{Name: "all", MCP: &exagentv1.MCPTool{URL: "http://c/mcp", Import: &exagentv1.MCPImport{}}},
	}
	env := mcpEnv(t, tools, map[string]*MCPListing{"say": listing, "fs": listing, "all": listing})
	var names []string
	for _, d := range env.Tools() {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"say", "fs_rm", "all_echo", "all_rm"}, names); diff != "" {
		t.Errorf("visible tools (-want +got):\n%s", diff)
	}
	if d := env.Tools()[0]; d.Description != "Say it." || !strings.Contains(string(d.Parameters), `"required":["text"]`) {
		t.Errorf("say = %+v, want the Agent's description and the server's schema", d)
	}
	if s := env.ToolSpec("all_rm"); s == nil || s.MCP.Tool != "rm" || s.MCP.Import != nil || s.MCP.URL != "http://c/mcp" {
		t.Errorf("all_rm runs with %+v", s)
	}
	if msg := env.toolUnavailable("fs_gone"); !strings.Contains(msg, `does not offer tool "gone"`) {
		t.Errorf("fs_gone: %q", msg)
	}
	if err := env.checkArgs("say", `{}`); err == nil {
		t.Error("the server's schema was not applied to say's arguments")
	}
	if len(env.Binding().Tools) != 3 {
		t.Errorf("binding has %d tools, want one per Agent tool", len(env.Binding().Tools))
	}
}

// TestMCPFingerprint: the server's schema, description and annotations
// are in the tool's fingerprint, so the payload hash changes with them;
// the definition (what ends a run) does not.
func TestMCPFingerprint(t *testing.T) {
	tools := []exagentv1.ToolSpec{{Name: "echo", MCP: &exagentv1.MCPTool{URL: "http://a/mcp"}}}
	base := mcpEnv(t, tools, map[string]*MCPListing{"echo": mcpListing(mcpInfo("echo", textSchema, true))})
	h0, _ := base.payloadHash("echo", `{"text":"x"}`)
	changes := map[string]MCPToolInfo{
		"schema":      mcpInfo("echo", `{"type":"object","properties":{"text":{"type":"string","maxLength":3}}}`, true),
		"annotations": mcpInfo("echo", textSchema, false),
		"description": {Name: "echo", Description: "new words", InputSchema: json.RawMessage(textSchema), Annotations: &MCPAnnotations{ReadOnlyHint: new(true)}},
	}
	for name, info := range changes {
		env := mcpEnv(t, tools, map[string]*MCPListing{"echo": mcpListing(info)})
		h, _ := env.payloadHash("echo", `{"text":"x"}`)
		if h == h0 {
			t.Errorf("%s changed, payload hash did not", name)
		}
		if env.Binding().Definition != base.Binding().Definition {
			t.Errorf("%s changed the definition fingerprint", name)
		}
	}
	idem := []exagentv1.ToolSpec{{Name: "echo", MCP: &exagentv1.MCPTool{URL: "http://a/mcp", Idempotent: true}}}
	if h, _ := mcpEnv(t, idem, map[string]*MCPListing{"echo": mcpListing(mcpInfo("echo", textSchema, true))}).payloadHash("echo", `{"text":"x"}`); h == h0 {
		t.Error("idempotent changed, payload hash did not")
	}
}

// TestMCPPolicyAnnotations: `when` reads tool.annotations; a missing hint
// takes the MCP spec's cautious default; prefix* rules match imports.
func TestMCPPolicyAnnotations(t *testing.T) {
	tools := []exagentv1.ToolSpec{{Name: "gh", MCP: &exagentv1.MCPTool{URL: "http://a/mcp", Import: &exagentv1.MCPImport{}}}}
	listing := mcpListing(mcpInfo("read", `{"type":"object"}`, true), mcpInfo("close", `{"type":"object"}`, false),
		MCPToolInfo{Name: "bare", InputSchema: json.RawMessage(`{"type":"object"}`)})
	env := mcpEnv(t, tools, map[string]*MCPListing{"gh": listing},
		exagentv1.PolicyRule{Name: "deny-destructive", Tools: []string{"gh_*"}, Action: exagentv1.PolicyDeny, When: "tool.annotations.destructiveHint && !tool.annotations.readOnlyHint"},
		exagentv1.PolicyRule{Name: "allow-read", Tools: []string{"gh_*"}, Action: exagentv1.PolicyAllow, When: "tool.annotations.readOnlyHint"})
	for tool, want := range map[string]exagentv1.PolicyAction{
		"gh_read": exagentv1.PolicyAllow, "gh_close": exagentv1.PolicyDeny, "gh_bare": exagentv1.PolicyDeny,
	} {
		if got, _ := env.policy.EvaluateTool(tool, env.toolAnnotations(tool), nil); got != want {
			t.Errorf("%s: %s, want %s", tool, got, want)
		}
	}
	// Annotations alone allow nothing: with no rule reading them, the default holds.
	plain := mcpEnv(t, tools, map[string]*MCPListing{"gh": listing})
	if got, _ := plain.policy.EvaluateTool("gh_read", plain.toolAnnotations("gh_read"), nil); got != exagentv1.PolicyAsk {
		t.Errorf("a read-only tool under default Ask: %s", got)
	}
	if plain.toolIdempotent("gh_read") {
		t.Error("a server's idempotentHint or readOnlyHint made the tool idempotent")
	}
}

// TestMCPWithoutListing: an Agent whose server could not be listed still
// has an Env (clocks, decisions); its named tools are unavailable.
func TestMCPWithoutListing(t *testing.T) {
	env := mcpEnv(t, []exagentv1.ToolSpec{{Name: "echo", MCP: &exagentv1.MCPTool{URL: "http://a/mcp"}}}, nil)
	if len(env.Tools()) != 0 || !strings.Contains(env.toolUnavailable("echo"), "could not be asked") {
		t.Errorf("tools %+v, unavailable %q", env.Tools(), env.toolUnavailable("echo"))
	}
}
