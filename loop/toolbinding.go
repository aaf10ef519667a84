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
	"slices"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// toolEffect is what a tool's calls do, as far as the Agent configures it:
// where the call goes and how an unknown outcome is treated. It enters each
// tool's fingerprint and so the payload hash, because an approval binds
// what a call does, not only what it is called (docs/architecture.md §13): an
// approval given for "POST to payments-staging" must not cover a POST to
// payments-prod after someone edits the Agent while the run waits.
//
// The fields are listed explicitly, not copied from the API types, so that
// a new API field is a decision here, not an accident. Left out on purpose:
//   - Secret values (never: the engine does not read them, and a hash of a
//     credential in a status is an offline guessing oracle). The Secret
//     *names and keys* a header comes from are in: a different Secret is a
//     different identity calling the endpoint.
//   - http.timeout: it bounds how long the operator waits, not what the
//     call does or where it goes; what a timeout leads to is governed by
//     idempotent (covered) and otherwise by Uncertain, which never re-sends
//     without a human. Covering it would re-ask every waiting approval when
//     an operator tunes a timeout.
//   - description: part of the definition fingerprint (what the model is
//     told), which ends the run on change instead.
type toolEffect struct {
	Kind    string         `json:"kind"`
	HTTP    *httpEffect    `json:"http,omitempty"`
	Builtin *builtinEffect `json:"builtin,omitempty"`
	MCP     *mcpEffect     `json:"mcp,omitempty"`
	Agent   *agentEffect   `json:"agent,omitempty"`
}

type httpEffect struct {
	URL        string      `json:"url"`
	Idempotent bool        `json:"idempotent"`
	Headers    []headerRef `json:"headers"`
}

type builtinEffect struct {
	Operation exagentv1.BuiltinOperation `json:"operation"`
	// Kinds is a set (listType=set): sorted, so reordering is no change.
	Kinds []string `json:"kinds"`
	// AllowSecrets turns a call the tool refuses into one that reads or
	// writes a Secret. Omitted when false: the fingerprints of tools that
	// predate the field stay what they were.
	AllowSecrets bool `json:"allowSecrets,omitempty"`
	// AnswerSchema (AskHuman) is the schema every answer must match.
	AnswerSchema json.RawMessage `json:"answerSchema,omitempty"`
}

// mcpEffect: the server, the server's name for the tool (or the import's
// selection), idempotency and header Secrets. The schema, description and
// annotations the server advertises are fingerprinted beside it, per
// model-visible tool (fingerprintMCP, docs/architecture.md §11). mcp.timeout is left
// out for the reason http.timeout is.
type mcpEffect struct {
	URL        string      `json:"url"`
	Tool       string      `json:"tool,omitempty"`
	Import     *mcpImport  `json:"import,omitempty"`
	Idempotent bool        `json:"idempotent"`
	Headers    []headerRef `json:"headers"`
}

type mcpImport struct {
	Prefix string `json:"prefix"`
	// Tools is a set: sorted; empty means all.
	Tools []string `json:"tools"`
}

// agentEffect: the child Agent a delegation starts a run of.
type agentEffect struct {
	AgentRef string `json:"agentRef"`
}

// headerRef names where a header's value comes from, never the value.
type headerRef struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
	Key    string `json:"key"`
}

// effectOf describes t's effect configuration. A new tool kind adds its
// case here (and a test in TestToolEffectBinding): a kind without one
// binds only its schema, which is never enough for an approval.
func effectOf(t *exagentv1.ToolSpec) toolEffect {
	e := toolEffect{Kind: t.Kind()}
	switch {
	case t.HTTP != nil:
		e.HTTP = &httpEffect{URL: t.HTTP.URL, Idempotent: t.HTTP.Idempotent, Headers: headerRefs(t.HTTP.Headers)}
	case t.Builtin != nil:
		kinds := slices.Clone(t.Builtin.Kinds)
		slices.Sort(kinds)
		e.Builtin = &builtinEffect{Operation: t.Builtin.Operation, Kinds: kinds, AllowSecrets: t.Builtin.AllowSecrets}
		if as := t.Builtin.AnswerSchema; as != nil && len(as.Raw) > 0 {
			if canon, err := canonical.JSON(json.RawMessage(as.Raw)); err == nil {
				e.Builtin.AnswerSchema = canon
			}
		}
	case t.MCP != nil:
		e.MCP = &mcpEffect{URL: t.MCP.URL, Idempotent: t.MCP.Idempotent, Headers: headerRefs(t.MCP.Headers)}
		if im := t.MCP.Import; im != nil {
			names := append([]string{}, im.Tools...)
			slices.Sort(names)
			e.MCP.Import = &mcpImport{Prefix: t.MCP.ImportPrefix(t.Name), Tools: names}
		} else {
			e.MCP.Tool = t.MCP.ServerTool(t.Name)
		}
	case t.Agent != nil:
		e.Agent = &agentEffect{AgentRef: t.Agent.AgentRef.Name}
	}
	return e
}

func headerRefs(hs []exagentv1.SecretHeader) []headerRef {
	out := make([]headerRef, 0, len(hs))
	for _, h := range hs {
		out = append(out, headerRef{Name: h.Name, Secret: h.ValueFrom.Name, Key: h.ValueFrom.Key})
	}
	return out
}
