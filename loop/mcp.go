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
	"fmt"
	"regexp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// MCPListing is what an MCP server's tools/list said, as the controller
// read it (the engine does no IO): the input to the tools of one Agent
// tool of kind mcp. Its schemas and annotations enter the tools'
// fingerprints, so a server that changes a tool while a run waits gets the
// approval asked again (docs/architecture.md §11).
type MCPListing struct {
	Tools []MCPToolInfo `json:"tools"`
}

// MCPToolInfo is one tool of a listing.
type MCPToolInfo struct {
	// Name is the server's name of the tool.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's JSON Schema of its arguments.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Annotations are the server's hints, nil when it gave none.
	Annotations *MCPAnnotations `json:"annotations,omitempty"`
}

// MCPAnnotations are the hints of the MCP spec. They come from a server the
// Agent does not control: policy may read them (tool.annotations), they
// never make a call allowed or idempotent by themselves.
type MCPAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

var visibleNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// mcpTool is one model-visible tool that an mcp ToolSpec resolves to.
type mcpTool struct {
	visible string
	// spec is the ToolSpec the call runs with: the Agent's, with name set
	// to the visible name, mcp.tool to the server's name and no import.
	spec exagentv1.ToolSpec
	info *MCPToolInfo // nil: the server does not offer it
}

// expandMCP resolves the Agent tool t of kind mcp against its listing (nil
// when the controller could not read it): the tools it names, or with an
// import of all, those the listing offers under valid visible names.
func expandMCP(t *exagentv1.ToolSpec, l *MCPListing) []mcpTool {
	byName := map[string]*MCPToolInfo{}
	if l != nil {
		for i := range l.Tools {
			byName[l.Tools[i].Name] = &l.Tools[i]
		}
	}
	one := func(visible, server string) mcpTool {
		s := *t.DeepCopy()
		s.Name, s.MCP.Tool, s.MCP.Import = visible, server, nil
		return mcpTool{visible: visible, spec: s, info: byName[server]}
	}
	m := t.MCP
	if m.Import == nil {
		return []mcpTool{one(t.Name, m.ServerTool(t.Name))}
	}
	prefix := m.ImportPrefix(t.Name)
	var out []mcpTool
	if len(m.Import.Tools) > 0 {
		for _, n := range m.Import.Tools {
			out = append(out, one(prefix+n, n))
		}
		return out
	}
	if l == nil {
		return nil
	}
	for i := range l.Tools {
		if v := prefix + l.Tools[i].Name; visibleNameRE.MatchString(v) {
			out = append(out, one(v, l.Tools[i].Name))
		}
	}
	return out
}

// annotationMap is what policy CEL sees as tool.annotations: the four hints
// with the MCP spec's defaults where the server gave none (readOnly false,
// destructive true, idempotent false, openWorld true — the cautious
// reading), and title when set. Non-mcp tools have an empty map.
func annotationMap(a *MCPAnnotations) map[string]any {
	v := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	if a == nil {
		a = &MCPAnnotations{}
	}
	out := map[string]any{
		"readOnlyHint":    v(a.ReadOnlyHint, false),
		"destructiveHint": v(a.DestructiveHint, true),
		"idempotentHint":  v(a.IdempotentHint, false),
		"openWorldHint":   v(a.OpenWorldHint, true),
	}
	if a.Title != "" {
		out["title"] = a.Title
	}
	return out
}

// unavailableMessage is what the model is told about a call to an mcp tool
// that cannot be called now.
func unavailableMessage(t *mcpTool, why string) string {
	return fmt.Sprintf("%s: the MCP server %s %s tool %q; the call was not run", exagentv1.ReasonToolUnavailable, t.spec.MCP.URL, why, t.spec.MCP.Tool)
}

// fingerprintMCP resolves the mcp Agent tool t against its listing:
// every tool it names or imports gets a spec, and every one the server
// offers with a usable schema a ToolDef, a compiled schema and a
// fingerprint over its schema, description, annotations and effect. The
// returned hash (for status.binding.tools, one entry per Agent tool) covers
// them all. Description is in the tool's fingerprint, not the definition:
// the server may reword a tool while a run waits; the approval is then
// asked again, the run does not end.
func (e *Env) fingerprintMCP(t *exagentv1.ToolSpec) (string, error) {
	listing, listed := e.in.MCP[t.Name]
	parts := []string{}
	for _, x := range expandMCP(t, listing) {
		if _, dup := e.specs[x.visible]; dup {
			continue // admission refuses overlapping names; the first wins
		}
		spec := x.spec
		e.specs[x.visible] = &spec
		switch {
		case !listed:
			e.unavailable[x.visible] = unavailableMessage(&x, "could not be asked (tools/list) about")
			continue
		case x.info == nil:
			e.unavailable[x.visible] = unavailableMessage(&x, "does not offer")
			continue
		}
		canon, sch, err := mcpInputSchema(x.info)
		if err != nil {
			// The server's schema, not the Agent, is at fault: the tool is
			// unusable, the rest of the Agent is not.
			e.unavailable[x.visible] = unavailableMessage(&x, fmt.Sprintf("offers an input schema exagent cannot use (%v) for", err))
			continue
		}
		e.argSchemas[x.visible] = sch
		desc := x.info.Description
		if t.MCP.Import == nil && t.Description != "" {
			desc = t.Description
		}
		ann := annotationMap(x.info.Annotations)
		h, err := canonical.HashOf(map[string]any{"name": x.visible, "parameters": json.RawMessage(canon),
			"effect": effectOf(&spec), "description": desc, "annotations": ann})
		if err != nil {
			return "", err
		}
		e.toolHashes[x.visible], e.annotations[x.visible] = h, ann
		e.tools = append(e.tools, ToolDef{Name: x.visible, Description: desc, Parameters: canon})
		parts = append(parts, x.visible+"="+h)
	}
	return canonical.HashOf(map[string]any{"name": t.Name, "effect": effectOf(t), "listed": listed, "tools": parts})
}

// mcpInputSchema is the canonical input schema a server lists for a tool
// (an object schema when it lists none), compiled by the validator every
// call's arguments go through.
func mcpInputSchema(info *MCPToolInfo) ([]byte, *ArgSchema, error) {
	schema := json.RawMessage(info.InputSchema)
	if len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	canon, err := canonical.JSON(schema)
	if err != nil {
		return nil, nil, err
	}
	sch, err := CompileArgSchema(canon)
	if err != nil {
		return nil, nil, err
	}
	return canon, sch, nil
}

// toolUnavailable says why a call of the visible tool name cannot run now
// ("" when it can).
func (e *Env) toolUnavailable(name string) string {
	if msg := e.unavailable[name]; msg != "" {
		return msg
	}
	return e.delegationUnavailable(name) // delegate.go
}

// toolAnnotations is what policy sees as tool.annotations.
func (e *Env) toolAnnotations(name string) map[string]any { return e.annotations[name] }

// toolIdempotent reports whether the Agent marks the tool safe to re-send
// with the same key after an unknown outcome. Server annotations
// (idempotentHint) never count.
func (e *Env) toolIdempotent(name string) bool {
	t := e.specs[name]
	switch {
	case t == nil:
		return false
	case t.HTTP != nil:
		return t.HTTP.Idempotent
	case t.MCP != nil:
		return t.MCP.Idempotent
	}
	return false
}

// noteMCP records on an mcp call the server and the annotations the policy
// saw, for approvers (kubectl approve show); other calls carry none.
func noteMCP(c *exagentv1.ToolCall, env *Env) {
	t, ann := env.tool(c.Tool), env.toolAnnotations(c.Tool)
	if t == nil || t.MCP == nil || ann == nil {
		c.MCP = nil
		return
	}
	b := func(k string) bool { v, _ := ann[k].(bool); return v }
	title, _ := ann["title"].(string)
	c.MCP = &exagentv1.CallMCP{Server: truncateUTF8(t.MCP.URL, exagentv1.MaxMCPServerLength), Tool: truncateUTF8(t.MCP.Tool, exagentv1.MaxMCPNameLength),
		Title: truncateUTF8(title, exagentv1.MaxMCPNameLength), ReadOnlyHint: b("readOnlyHint"), DestructiveHint: b("destructiveHint"),
		IdempotentHint: b("idempotentHint"), OpenWorldHint: b("openWorldHint")}
}
