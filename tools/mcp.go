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
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/loop"
)

// MetaIdempotencyKey is the _meta key of tools/call that carries the
// call's idempotency key (the same value as the Idempotency-Key header).
const MetaIdempotencyKey = "exagent.io/idempotency-key"

// MetaInputRound is the _meta key of a retried tools/call carrying the
// answers to round N of the server's input requests (the idempotency key
// stays the call's).
const MetaInputRound = "exagent.io/input-round"

// DefaultMCPTimeout applies when mcp.timeout is unset.
const DefaultMCPTimeout = 60 * time.Second

// MCP calls one tool of an MCP server over streamable HTTP with the
// official SDK. Every call is its own session (initialize, tools/call,
// close): no MCP session state outlives a call or is stored in a run.
//
// Contract: a result → succeeded with its content as text, or failed when
// isError (with the server's text). A JSON-RPC error answer → failed when
// its code proves the server refused the request before running it
// (refusedBeforeRunning), else unknown. A failure before tools/call could
// have been sent (refused, DNS, the egress policy, a failed initialize) →
// failed. A timeout or broken stream after it was sent → unknown, unless
// Idempotent, where the call is re-sent with the same idempotency key up
// to MaxAttempts times. An answer over MaxMCPAnswerBytes → unknown, never
// re-sent (a re-send gets the same answer); a redirect is never followed
// and is classified as the http tool classifies it. A server on MCP
// 2026-07-28 that answers input_required gets a durable pause: the result
// is ResultInputRequired with its requests and state (loop/mcpinput.go),
// and the retry carries the answers. A server that asks over the live
// stream instead (sampling, elicitation on older revisions) gets no answer
// it could wait on: this client declares neither capability, and the call
// fails with a message saying the server must use input requests.
type MCP struct {
	URL         string
	Tool        string
	Timeout     time.Duration
	Idempotent  bool
	MaxAttempts int
	// Headers are the resolved values of spec.headers.
	Headers map[string]string
	Client  *http.Client
}

var _ Tool = (*MCP)(nil)

// NewMCP builds the tool for a spec as loop.Env.ToolSpec returns it (the
// visible name in name, the server's in mcp.tool).
func NewMCP(spec *exagentv1.ToolSpec, headers map[string]string, client *http.Client) (*MCP, error) {
	if spec.MCP == nil || spec.MCP.Import != nil {
		return nil, fmt.Errorf("tool %q is not a single mcp tool", spec.Name)
	}
	timeout, _, err := spec.MCP.Timeout.Parse(DefaultMCPTimeout)
	if err != nil {
		return nil, fmt.Errorf("mcp tool timeout: %w", err)
	}
	return &MCP{URL: spec.MCP.URL, Tool: spec.MCP.ServerTool(spec.Name), Timeout: timeout,
		Idempotent: spec.MCP.Idempotent, MaxAttempts: 3, Headers: headers, Client: client}, nil
}

// Invoke calls the tool.
func (m *MCP) Invoke(ctx context.Context, call Call) loop.ToolResult {
	attempts := 1
	if m.Idempotent && m.MaxAttempts > 1 {
		attempts = m.MaxAttempts
	}
	var res loop.ToolResult
	for i := 0; i < attempts; i++ {
		if i > 0 && !sleep(ctx, backoff(i, 200*time.Millisecond, 2*time.Second, 0)) {
			return res
		}
		var resend bool
		res, resend = m.once(ctx, call)
		if res.Kind != loop.ResultUnknown || !resend || ctx.Err() != nil {
			return res
		}
	}
	return res
}

func (m *MCP) once(ctx context.Context, call Call) (res loop.ToolResult, resend bool) {
	ctx = egress.WithNamespace(ctx, call.RunNamespace)
	ctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	headers := map[string]string{
		HeaderIdempotencyKey: call.IdempotencyKey,
		HeaderRun:            call.RunNamespace + "/" + call.RunName,
		HeaderCall:           call.CallID,
	}
	for k, v := range m.Headers {
		headers[k] = v
	}
	rt := &mcpTransport{base: transportOf(m.Client), headers: headers, namespace: call.RunNamespace}
	session, err := connectMCP(ctx, m.URL, m.Client, rt)
	if err != nil {
		return failed(call, "tools/call not sent: connecting to the MCP server %s: %v%s", m.URL, err, rt.why()), false
	}
	defer func() { _ = session.Close() }()

	var args map[string]any
	if len(call.Args) > 0 {
		if err := json.Unmarshal(call.Args, &args); err != nil {
			return failed(call, "arguments are not a JSON object: %v", err), false
		}
	}
	params := &mcp.CallToolParams{Name: m.Tool, Arguments: args,
		Meta: mcp.Meta{MetaIdempotencyKey: call.IdempotencyKey, "progressToken": call.IdempotencyKey}}
	if call.InputRound > 0 {
		// The retry of an input_required answer (loop/mcpinput.go): the
		// same arguments and key, the people's answers and the server's state.
		var responses mcp.InputResponseMap
		if err := json.Unmarshal(call.InputResponses, &responses); err != nil {
			return failed(call, "tools/call not sent: the journaled input responses do not decode: %v", err), false
		}
		params.InputResponses, params.RequestState = responses, call.RequestState
		params.Meta[MetaInputRound] = call.InputRound
	}
	rt.calling.Store(true)
	result, err := session.CallTool(ctx, params)
	if err != nil {
		return m.callError(call, rt, err)
	}
	if result.NeedsInput() {
		reqs, err := json.Marshal(result.InputRequests)
		if err != nil {
			return failed(call, "the MCP server asked for input to complete tool %q in a form exagent cannot read: %v", m.Tool, err), false
		}
		return loop.ToolResult{CallID: call.CallID, Kind: loop.ResultInputRequired, InputRequests: reqs, RequestState: result.RequestState}, false
	}
	text := contentText(result)
	if result.IsError {
		if text == "" {
			text = "(no text)"
		}
		return failed(call, "tool %q reported an error: %s%s", m.Tool, text, liveStreamHint(text)), false
	}
	return succeeded(call, text), false
}

// callError classifies a tools/call that returned an error.
func (m *MCP) callError(call Call, rt *mcpTransport, err error) (loop.ToolResult, bool) {
	var rpcErr *jsonrpc.Error
	switch {
	case !rt.began.Load():
		return failed(call, "tools/call not sent: %v%s", err, rt.why()), false
	case rt.tooLarge.Load() != nil:
		return unknown(call, "outcome unknown: tools/call %q to %s was sent, but %v; resolve the call, and make the server answer less",
			m.Tool, m.URL, rt.tooLarge.Load()), false
	case rt.redirect.Load() != nil && rt.redirect.Load().calling:
		r := rt.redirect.Load()
		return redirectOutcome(call, &http.Response{StatusCode: r.status, Header: http.Header{"Location": {r.location}}}), false
	case errors.As(err, &rpcErr) && refusedBeforeRunning(rpcErr.Code):
		return failed(call, "the MCP server refused tools/call %q: %s (code %d)", m.Tool, rpcErr.Message, rpcErr.Code), false
	case errors.As(err, &rpcErr):
		return unknown(call, "outcome unknown: the MCP server answered tools/call %q with error %d %q after it was sent: "+
			"the tool may have run", m.Tool, rpcErr.Code, rpcErr.Message), true
	}
	return unknown(call, "outcome unknown: tools/call %q to %s was sent, then: %v", m.Tool, m.URL, err), true
}

// refusedBeforeRunning reports whether a JSON-RPC error code proves the
// server refused the request before running anything: the JSON-RPC 2.0
// standard codes for a request that could not be parsed (-32700), is not
// a valid request (-32600), names no method the server has (-32601), or
// has invalid parameters (-32602, which MCP also uses for an unknown tool
// and for arguments that fail the tool's schema). Every other code —
// -32603 internal error, the implementation-defined -32000…-32099 (the
// SDK's own "client is closing" among them), an application's code — may
// come from a tool that had begun its work: the effect may have happened.
func refusedBeforeRunning(code int64) bool {
	switch code {
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams:
		return true
	}
	return false
}

// contentText is the result the model sees: text blocks as they are,
// other kinds summarised with their type and size, structured content as
// JSON when there is no content block.
func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch b := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, b.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", b.MIMEType, len(b.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", b.MIMEType, len(b.Data)))
		case *mcp.ResourceLink:
			size := ""
			if b.Size != nil {
				size = fmt.Sprintf(", %d bytes", *b.Size)
			}
			parts = append(parts, fmt.Sprintf("[resource link %s %s%s]", b.URI, b.MIMEType, size))
		case *mcp.EmbeddedResource:
			if r := b.Resource; r != nil {
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Text)+len(r.Blob)))
			}
		default:
			data, _ := json.Marshal(c)
			parts = append(parts, fmt.Sprintf("[content %T, %d bytes]", c, len(data)))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			return string(data)
		}
	}
	return strings.Join(parts, "\n")
}

// connectMCP opens a session: the initialize handshake over streamable
// HTTP. The client declares no sampling capability and refuses live-stream
// elicitations (refuseLiveElicitation), turns
// off the SDK's automatic multi-round-trip retries (a re-send is this
// tool's decision alone) and reconnects of broken streams, and follows no
// redirect (whatever base says).
func connectMCP(ctx context.Context, url string, base *http.Client, rt http.RoundTripper) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: rt, CheckRedirect: egress.NoRedirect}
	if base != nil {
		hc.Jar = base.Jar
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "exagent", Version: exagentv1.GroupVersion.Version},
		&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, ElicitationHandler: refuseLiveElicitation})
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	return client.Connect(ctx, t, nil)
}

func transportOf(c *http.Client) http.RoundTripper {
	if c != nil && c.Transport != nil {
		return c.Transport
	}
	return egress.DefaultTransport()
}

// MaxMCPAnswerBytes bounds one HTTP response of an MCP server: an
// initialize, a tools/list page, a tools/call answer or its event stream.
const MaxMCPAnswerBytes = 8 << 20

// mcpTransport adds the headers to every request of a session and, once
// calling is set, flips began as soon as any byte of a request (the
// tools/call POST) may have reached the wire. It bounds every response
// body (MaxMCPAnswerBytes) — and, for a listing, all of them together —
// and notes a bound passed or a redirect, which the SDK's errors only
// describe in words.
type mcpTransport struct {
	base    http.RoundTripper
	headers map[string]string
	// namespace of the run, for the egress policy (the context usually
	// carries it already).
	namespace string
	calling   atomic.Bool
	began     atomic.Bool
	tooLarge  atomic.Pointer[bounded.TooLargeError]
	redirect  atomic.Pointer[redirectSeen]
	// listing, when set, bounds every response of the session together:
	// a tools/list's pages (MCPCatalog.fetch).
	listing *listingBudget
}

type redirectSeen struct {
	status   int
	location string
	// calling: it answered a request of the tools/call (else of the
	// handshake, so tools/call was never sent).
	calling bool
}

// why adds what the transport saw to an error of the SDK's.
func (t *mcpTransport) why() string {
	if tl := t.tooLarge.Load(); tl != nil {
		return " (" + tl.Error() + ")"
	}
	if r := t.redirect.Load(); r != nil {
		return fmt.Sprintf(" (HTTP %d redirect to %s not followed: exagent never follows redirects; point the url at the final address)",
			r.status, truncate(r.location, 256))
	}
	return ""
}

func (t *mcpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t.namespace != "" && egress.NamespaceFrom(ctx) == "" {
		ctx = egress.WithNamespace(ctx, t.namespace)
	}
	req = req.Clone(ctx)
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	calling := t.calling.Load()
	if calling {
		// Flipped from the trace itself, not after RoundTrip returns: the
		// SDK may give up on a call (its context ended) before the POST's
		// RoundTrip does.
		trace := &httptrace.ClientTrace{
			WroteHeaderField: func(string, []string) { t.began.Store(true) },
			WroteHeaders:     func() { t.began.Store(true) },
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	}
	resp, err := t.base.RoundTrip(req)
	if resp == nil {
		return resp, err
	}
	if resp.StatusCode/100 == 3 {
		// The SDK reports a 3xx as an unexpected status; the tools/call
		// POST's redirect is classified like the http tool's.
		t.redirect.CompareAndSwap(nil, &redirectSeen{status: resp.StatusCode, location: resp.Header.Get("Location"), calling: calling})
	}
	if resp.Body != nil {
		resp.Body = bounded.Body(resp.Body, MaxMCPAnswerBytes, "the MCP server's answer", func(e *bounded.TooLargeError) {
			t.tooLarge.CompareAndSwap(nil, e)
		})
		if t.listing != nil {
			resp.Body = t.listing.body(resp.Body)
		}
	}
	return resp, err
}

// errLiveElicitation answers an elicitation a server sends over the live
// stream: a person may take hours, and no stream is held that long.
var errLiveElicitation = errors.New("exagent does not answer elicitation over the live stream: to wait for a person, " +
	"the server must speak MCP 2026-07-28 input requests (answer tools/call with resultType input_required), which pause the run durably")

// refuseLiveElicitation is the client's elicitation handler. Declaring the
// capability lets servers that only offer asking tools to clients that can
// answer (server-everything) list them, and their calls then fail at once
// with errLiveElicitation instead of a tool the server does not offer.
func refuseLiveElicitation(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return nil, errLiveElicitation
}

// liveStreamHint explains a failure a server reports because it asked
// for input over the live stream (sampling, elicitation on an older
// revision), which this client never answers.
func liveStreamHint(text string) string {
	t := strings.ToLower(text)
	if strings.Contains(t, "2026-07-28") {
		return "" // the server passed on what the client told it
	}
	if !strings.Contains(t, "elicit") && !strings.Contains(t, "sampling") && !strings.Contains(t, "createmessage") {
		return ""
	}
	return " (the server asked for input over the live stream, which no durable pause can hold: to wait for a person, " +
		"the server must speak MCP 2026-07-28 input requests — answer tools/call with resultType input_required)"
}
