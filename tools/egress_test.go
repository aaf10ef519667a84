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
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
	"github.com/exagent-io/exagent/loop"
)

// loopbackOnly is the policy of the tests: 127.0.0.1 allowed, every other
// address of 127.0.0.0/8 (loopback, default deny) refused.
func loopbackOnly(t *testing.T) *http.Client {
	t.Helper()
	allow, err := egress.ParseCIDRs("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	return egress.NewClient(egress.TransportOptions{Policy: egress.New(egress.Config{Allow: allow})})
}

// deniedServer listens on 127.0.0.2, which loopbackOnly refuses, and
// counts what reaches it.
func deniedServer(t *testing.T) (url string, hits *atomic.Int32) {
	t.Helper()
	hits = &atomic.Int32{}
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

var httpCall = Call{ToolInvocation: loop.ToolInvocation{CallID: "c1", Tool: "t", Args: json.RawMessage(`{"a":1}`), IdempotencyKey: "uid/c1"},
	RunNamespace: "ns", RunName: "r"}

// TestHTTPRedirects: a redirect is never followed — not even by a client
// with Go's default redirect policy — so the Secret-valued headers never
// reach the Location, and the 3xx itself is the outcome: 303 and 302 (how
// servers answer a POST they processed, and how auth proxies send to a
// login page) leave the effect unknown and are never re-sent; 301, 307 and
// 308 say the request was not processed there.
func TestHTTPRedirects(t *testing.T) {
	target, hits := deniedServer(t)
	tests := map[string]struct {
		status   int
		location string
		client   *http.Client
		wantKind loop.ResultKind
	}{
		"303 after the effect, to a denied address": {status: http.StatusSeeOther, location: target + "/latest/meta-data/", client: loopbackOnly(t), wantKind: loop.ResultUnknown},
		"303 with Go's default redirect policy":     {status: http.StatusSeeOther, location: target + "/", client: &http.Client{}, wantKind: loop.ResultUnknown},
		"302 to a login page is not Succeeded":      {status: http.StatusFound, location: target + "/login?next=/refund", client: loopbackOnly(t), wantKind: loop.ResultUnknown},
		"308 is not processed here":                 {status: http.StatusPermanentRedirect, location: target + "/v2/refund", client: &http.Client{}, wantKind: loop.ResultFailed},
		"307 is not processed here":                 {status: http.StatusTemporaryRedirect, location: target + "/", client: loopbackOnly(t), wantKind: loop.ResultFailed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var first atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				first.Add(1)
				http.Redirect(w, r, tc.location, tc.status)
			}))
			defer srv.Close()
			tool := &HTTP{URL: srv.URL, Timeout: 5 * time.Second, Idempotent: true, MaxAttempts: 3, Client: tc.client,
				Headers: map[string]string{"Metadata-Flavor": "Google", "X-Api-Key": "s3cret"}}
			got := tool.Invoke(t.Context(), httpCall)
			if got.Kind != tc.wantKind {
				t.Errorf("kind = %s (%s), want %s", got.Kind, got.Output, tc.wantKind)
			}
			for _, w := range []string{"HTTP " + strconv.Itoa(tc.status) + " redirect to " + tc.location, "not followed"} {
				if !strings.Contains(got.Output, w) {
					t.Errorf("output %q does not contain %q", got.Output, w)
				}
			}
			if strings.Contains(got.Output, "not sent") {
				t.Errorf("output %q says not sent: the request was answered", got.Output)
			}
			if n := first.Load(); n != 1 {
				t.Errorf("the endpoint saw %d requests, want 1 (a redirect answer is never re-sent)", n)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the redirect target saw %d requests (with the Secret headers): want none", n)
			}
		})
	}
}

// TestHTTPEgressDenied: the policy is checked after DNS — "localhost"
// passes any check of the URL but resolves to loopback — and a refusal is
// a clean failure naming the rule and the address, never unknown and
// never re-sent, with nothing received by the server.
func TestHTTPEgressDenied(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	client := egress.NewClient(egress.TransportOptions{}) // the manager's defaults
	for name, url := range map[string]string{
		"a name resolving to loopback": "http://localhost:" + port + "/refund",
		"the metadata address":         "http://169.254.169.254/computeMetadata/v1/",
	} {
		t.Run(name, func(t *testing.T) {
			tool := &HTTP{URL: url, Timeout: 5 * time.Second, Idempotent: true, MaxAttempts: 3, Client: client}
			got := tool.Invoke(t.Context(), httpCall)
			if got.Kind != loop.ResultFailed {
				t.Fatalf("kind = %s (%s), want Failed", got.Kind, got.Output)
			}
			for _, w := range []string{"request not sent: egress denied: ", "(default deny; allow with --egress-allow-cidrs)"} {
				if !strings.Contains(got.Output, w) {
					t.Errorf("output %q does not contain %q", got.Output, w)
				}
			}
		})
	}
	if hits.Load() != 0 {
		t.Errorf("the server saw %d requests, want none", hits.Load())
	}
}

// TestHTTPAnswerOverBound: a 2xx answer over MaxResultBytes is no
// Succeeded with a silently cut result: the server acted, its result is
// lost — unknown, and not re-sent even when idempotent. A refusal over the
// bound stays a failure with an excerpt.
func TestHTTPAnswerOverBound(t *testing.T) {
	for name, tc := range map[string]struct {
		status   int
		wantKind loop.ResultKind
		want     string
	}{
		"2xx": {status: http.StatusOK, wantKind: loop.ResultUnknown, want: "HTTP 200: the server acted, but the answer is over the 64 KiB bound"},
		"4xx": {status: http.StatusBadRequest, wantKind: loop.ResultFailed, want: "[the answer is over 64 KiB]"},
	} {
		t.Run(name, func(t *testing.T) {
			var sends atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				sends.Add(1)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(strings.Repeat("x", MaxResultBytes+1)))
			}))
			defer srv.Close()
			tool := &HTTP{URL: srv.URL, Timeout: 5 * time.Second, Idempotent: true, MaxAttempts: 3, Client: loopbackOnly(t)}
			got := tool.Invoke(t.Context(), httpCall)
			if got.Kind != tc.wantKind || !strings.Contains(got.Output, tc.want) {
				t.Errorf("result = %s %q, want %s containing %q", got.Kind, truncate(got.Output, 300), tc.wantKind, tc.want)
			}
			if n := sends.Load(); n != 1 {
				t.Errorf("sent %d times, want once", n)
			}
		})
	}
}

// hugeMCPServer is the mcptest server with tools whose answers pass the
// bound, and an error-raising tool for the JSON-RPC classification.
func hugeMCPServer(t *testing.T) *mcptest.Server {
	t.Helper()
	srv := mcptest.Start()
	t.Cleanup(srv.Close)
	schema := map[string]any{"type": "object"}
	var crashes atomic.Int32
	srv.MCP.AddTool(&mcp.Tool{Name: "huge", Description: "Answers too much.", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", MaxMCPAnswerBytes)}}}, nil
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "crash", Description: "Acts, then raises.", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			crashes.Add(1)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "database timeout after the write"}
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "picky", Description: "Refuses before running.", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "amount must be positive"}
		})
	return srv
}

// TestMCPAnswerOverBound: a tools/call answer over MaxMCPAnswerBytes is an
// unknown outcome naming the bound (the call was sent), never re-sent.
func TestMCPAnswerOverBound(t *testing.T) {
	srv := hugeMCPServer(t)
	m := mcpTool(t, srv.URL, "huge", "20s", true)
	m.Client = loopbackOnly(t)
	got := m.Invoke(t.Context(), mcpCall("visible_huge", `{}`))
	if got.Kind != loop.ResultUnknown || !strings.Contains(got.Output, "the MCP server's answer is over the 8 MiB bound") {
		t.Errorf("result = %s %q, want Unknown naming the bound", got.Kind, got.Output)
	}
}

// TestMCPListOverBound: a tools/list answer over the bound is an error
// naming it, whatever client the listing is given (the bound is in
// mcpTransport, which the catalog's sessions use too).
func TestMCPListOverBound(t *testing.T) {
	srv := hugeMCPServer(t)
	srv.MCP.AddTool(&mcp.Tool{Name: "verbose", Description: strings.Repeat("d", MaxMCPAnswerBytes), InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	ctx, cancel := context.WithTimeout(t.Context(), DefaultMCPListTimeout)
	defer cancel()
	rt := &mcpTransport{base: transportOf(loopbackOnly(t))}
	session, err := connectMCP(ctx, srv.URL, loopbackOnly(t), rt)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = session.Close() }()
	_, err = session.ListTools(ctx, nil)
	if err == nil || rt.tooLarge.Load() == nil {
		t.Fatalf("tools/list: err %v, bound tripped %v; want an error at the bound", err, rt.tooLarge.Load())
	}
}

// TestMCPRPCErrorAfterSend: a JSON-RPC error answering a tools/call that
// was sent may come from a tool that already acted — unknown (re-sent
// when idempotent) — unless its code proves the server refused the
// request before running it (-32602 invalid params, an unknown tool).
func TestMCPRPCErrorAfterSend(t *testing.T) {
	srv := hugeMCPServer(t)
	tests := map[string]struct {
		tool       string
		idempotent bool
		wantKind   loop.ResultKind
		want       string
	}{
		"internal error after acting: unknown": {tool: "crash", wantKind: loop.ResultUnknown,
			want: `answered tools/call "crash" with error -32603 "database timeout after the write" after it was sent: the tool may have run`},
		"idempotent: re-sent, still unknown": {tool: "crash", idempotent: true, wantKind: loop.ResultUnknown, want: "may have run"},
		"invalid params: refused before running": {tool: "picky", wantKind: loop.ResultFailed,
			want: `refused tools/call "picky": amount must be positive (code -32602)`},
		"unknown tool: refused before running": {tool: "gone", wantKind: loop.ResultFailed, want: "code -32602"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := mcpTool(t, srv.URL, tc.tool, "10s", tc.idempotent)
			m.Client = loopbackOnly(t)
			got := m.Invoke(t.Context(), mcpCall("visible_"+tc.tool, `{}`))
			if got.Kind != tc.wantKind || !strings.Contains(got.Output, tc.want) {
				t.Errorf("result = %s %q, want %s containing %q", got.Kind, got.Output, tc.wantKind, tc.want)
			}
		})
	}
}

// TestMCPRedirectNotFollowed: an MCP endpoint that redirects is never
// followed (the Location never sees the session's headers); a redirected
// initialize means tools/call was never sent.
func TestMCPRedirectNotFollowed(t *testing.T) {
	target, hits := deniedServer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	m := mcpTool(t, srv.URL, "echo", "10s", false)
	m.Client = &http.Client{Transport: http.DefaultTransport} // Go's default policy would follow a 307
	got := m.Invoke(t.Context(), mcpCall("visible_echo", `{}`))
	if got.Kind != loop.ResultFailed || !strings.Contains(got.Output, "tools/call not sent") || !strings.Contains(got.Output, "307") {
		t.Errorf("result = %s %q, want Failed, not sent, naming the 307", got.Kind, got.Output)
	}
	if hits.Load() != 0 {
		t.Errorf("the redirect target saw %d requests, want none", hits.Load())
	}
}

// TestMCPEgressDenied: an MCP server at a denied address is refused at
// dial time: tools/call not sent, the rule named.
func TestMCPEgressDenied(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	m := mcpTool(t, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), "echo", "10s", true)
	m.Client = egress.NewClient(egress.TransportOptions{})
	got := m.Invoke(t.Context(), mcpCall("visible_echo", `{"text":"hi"}`))
	if got.Kind != loop.ResultFailed || !strings.Contains(got.Output, "egress denied: ") || !strings.Contains(got.Output, "is loopback") {
		t.Errorf("result = %s %q, want Failed naming the loopback rule", got.Kind, got.Output)
	}
	if n := len(srv.Calls("")); n != 0 {
		t.Errorf("the server saw %d calls, want none", n)
	}
}
