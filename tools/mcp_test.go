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

package tools

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
	"github.com/exagent-io/exagent/loop"
)

func mcpCall(tool, args string) Call {
	return Call{ToolInvocation: loop.ToolInvocation{CallID: "c1", Tool: tool, Args: json.RawMessage(args), IdempotencyKey: "uid/c1"},
		RunNamespace: "ns", RunName: "r"}
}

func mcpTool(t *testing.T, url, tool string, timeout string, idempotent bool) *MCP {
	t.Helper()
	m, err := NewMCP(&exagentv1.ToolSpec{Name: "visible_" + tool, MCP: &exagentv1.MCPTool{URL: url, Tool: tool,
		Timeout: exagentv1.Duration(timeout), Idempotent: idempotent}},
		map[string]string{"Authorization": "Bearer s3cret"}, loopbackOnly(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMCPCall covers the outcomes of tools/call against a real SDK server.
func TestMCPCall(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		return "http://" + l.Addr().String() + "/mcp"
	}()
	tests := map[string]struct {
		url, tool, args string
		timeout         string
		idempotent      bool
		hangFirst       int
		wantKind        loop.ResultKind
		wantOutput      []string
		wantCalls       int
	}{
		"text and image content": {tool: "echo", args: `{"text":"hi"}`, wantKind: loop.ResultSucceeded,
			wantOutput: []string{"echo: hi\n[image image/png, 8 bytes]"}, wantCalls: 1},
		"isError is a failed outcome with the server's text": {tool: "fail", args: `{}`, wantKind: loop.ResultFailed,
			wantOutput: []string{"boom: the tool failed"}, wantCalls: 1},
		"a tool the server does not have is refused": {tool: "gone", args: `{}`, wantKind: loop.ResultFailed,
			wantOutput: []string{"refused", "gone"}},
		"connection refused: not sent": {url: refused, tool: "echo", args: `{}`, wantKind: loop.ResultFailed,
			wantOutput: []string{"not sent"}},
		"a hang past the timeout is unknown, never re-sent": {tool: "hang", args: `{}`, timeout: "2s", wantKind: loop.ResultUnknown,
			wantOutput: []string{"outcome unknown"}, wantCalls: 1},
		"idempotent: re-sent with the same key": {tool: "flaky", args: `{}`, timeout: "2s", idempotent: true, hangFirst: 1,
			wantKind: loop.ResultSucceeded, wantOutput: []string{"flaky: done"}, wantCalls: 2},
		"elicitation is a failure, not a hang": {tool: "ask", args: `{}`, timeout: "20s", wantKind: loop.ResultFailed,
			wantOutput: []string{"elicitation failed", "does not answer elicitation over the live stream", "must speak MCP 2026-07-28 input requests"}, wantCalls: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv.SetHangFirst(tc.hangFirst)
			url := cmpOr(tc.url, srv.URL)
			before := len(srv.Calls(tc.tool))
			res := mcpTool(t, url, tc.tool, tc.timeout, tc.idempotent).Invoke(t.Context(), mcpCall("visible_"+tc.tool, tc.args))
			if res.Kind != tc.wantKind {
				t.Fatalf("kind = %s (%s), want %s", res.Kind, res.Output, tc.wantKind)
			}
			for _, w := range tc.wantOutput {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output %q does not contain %q", res.Output, w)
				}
			}
			calls := srv.Calls(tc.tool)[before:]
			if tc.url == "" && len(calls) != tc.wantCalls {
				t.Fatalf("server saw %d calls, want %d", len(calls), tc.wantCalls)
			}
			for _, c := range calls {
				if c.HeaderKey != "uid/c1" || c.MetaKey != "uid/c1" || c.Authorization != "Bearer s3cret" {
					t.Errorf("call carried header key %q, _meta key %q, authorization %q; want uid/c1, uid/c1, the Secret's",
						c.HeaderKey, c.MetaKey, c.Authorization)
				}
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestMCPInputRequests: a 2026-07-28 server's input_required answer is
// ResultInputRequired with its requests and state, never a failure and
// never Unknown; the retry carries the answers, the same idempotency key
// and the round, and completes.
func TestMCPInputRequests(t *testing.T) {
	srv := mcptest.StartStateless()
	defer srv.Close()
	m := mcpTool(t, srv.URL, "form", "20s", false)
	first := m.Invoke(context.Background(), mcpCall("form", `{}`))
	if first.Kind != loop.ResultInputRequired || first.RequestState != "st-1" ||
		!strings.Contains(string(first.InputRequests), `"Which region?"`) || !strings.Contains(string(first.InputRequests), `"elicitation/create"`) {
		t.Fatalf("first answer: %+v (%s)", first, first.InputRequests)
	}
	retry := mcpCall("form", `{}`)
	retry.InputRound, retry.RequestState = 1, first.RequestState
	retry.InputResponses = json.RawMessage(`{"region":{"action":"accept","content":{"region":"eu"}}}`)
	done := m.Invoke(context.Background(), retry)
	if done.Kind != loop.ResultSucceeded || done.Output != "form: region=eu action=accept state=st-1" {
		t.Fatalf("retry: %+v", done)
	}
	calls := srv.Calls("form")
	if len(calls) != 2 || calls[1].MetaKey != "uid/c1" || calls[1].InputRound != 1 || calls[1].RequestState != "st-1" {
		t.Fatalf("the server saw %+v", calls)
	}
}
