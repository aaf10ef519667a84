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

package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is what the server saw of one tools/call.
type Call struct {
	Tool string
	// HeaderKey and MetaKey are the idempotency key as the Idempotency-Key
	// header and as _meta "exagent.io/idempotency-key".
	HeaderKey     string
	MetaKey       string
	Authorization string
	Args          string
	// RequestState and InputResponses (JSON) are what a retry after an
	// input_required answer carried; InputRound its _meta round.
	RequestState   string
	InputResponses string
	InputRound     float64
}

// Server is a streamable-HTTP MCP server on 127.0.0.1 with these tools:
//   - echo {text}: returns "echo: <text>" and a small image (readOnlyHint);
//   - fail: isError with the text "boom: the tool failed";
//   - hang: never answers until the client goes away;
//   - flaky: the first HangFirst calls hang, later ones answer "flaky: done";
//   - ask: asks the client for input (elicitation) and reports the answer;
//   - form, visit, twice, sample (StartStateless only): MCP 2026-07-28
//     input requests (mrtr.go).
type Server struct {
	URL string
	MCP *mcp.Server

	mu        sync.Mutex
	calls     []Call
	hangFirst int
	http      *httptest.Server
	stop      chan struct{}
	closeOnce sync.Once
	gate      gate
}

// wait blocks a hanging handler until its request ends or the server closes
// (the SDK keeps a handler's context past the client's going away).
func (s *Server) wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.stop:
	}
}

// Start runs the server until Close.
func Start() *Server { return start(nil) }

// StartStateless runs the server in the SDK's stateless mode, the one its
// streamable HTTP handler speaks MCP 2026-07-28 in (server/discover, and
// input requests answered input_required instead of over the stream).
func StartStateless() *Server { return start(&mcp.StreamableHTTPOptions{Stateless: true}) }

func start(opts *mcp.StreamableHTTPOptions) *Server {
	s := &Server{stop: make(chan struct{}), MCP: mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "v0"}, nil)}
	ro, notDestructive := true, false
	s.MCP.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes text.",
		InputSchema: EchoSchema(),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: &notDestructive, Title: "Echo"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			var args struct{ Text string }
			_ = jsonUnmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "echo: " + args.Text},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG....")},
			}}, nil
		})
	s.MCP.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom: the tool failed"}}}, nil
		})
	s.MCP.AddTool(&mcp.Tool{Name: "hang", Description: "Never answers.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			s.wait(ctx)
			return nil, fmt.Errorf("gave up")
		})
	s.MCP.AddTool(&mcp.Tool{Name: "flaky", Description: "Hangs at first.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if n := s.record(req); n <= s.HangFirst() {
				s.wait(ctx)
				return nil, fmt.Errorf("gave up")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flaky: done"}}}, nil
		})
	s.MCP.AddTool(&mcp.Tool{Name: "ask", Description: "Asks the user.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "which account?"})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer: " + res.Action}}}, nil
		})
	if opts != nil && opts.Stateless {
		s.addInputTools() // only a stateless handler speaks 2026-07-28 input requests
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP }, opts)
	s.http = httptest.NewServer(s.gate.wrap(h)) // httptest binds 127.0.0.1
	s.URL = s.http.URL
	return s
}

// Close stops the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.http.CloseClientConnections()
		s.http.Close()
	})
}

// SetHangFirst makes the first n calls of flaky hang.
func (s *Server) SetHangFirst(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hangFirst = n
}

// HangFirst is the number of flaky calls that hang.
func (s *Server) HangFirst() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hangFirst
}

// SetEchoSchema replaces echo's input schema (the handler stays).
func (s *Server) SetEchoSchema(schema map[string]any) {
	ro := true
	s.MCP.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes text.", InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro, Title: "Echo"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo (new schema)"}}}, nil
		})
}

// Calls returns the calls seen so far of tool ("" for all).
func (s *Server) Calls(tool string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if tool == "" || c.Tool == tool {
			out = append(out, c)
		}
	}
	return out
}

// record notes a call and returns how many calls of its tool there were.
func (s *Server) record(req *mcp.CallToolRequest) int {
	c := Call{Tool: req.Params.Name, Args: string(req.Params.Arguments)}
	if req.Extra != nil && req.Extra.Header != nil {
		c.HeaderKey = req.Extra.Header.Get("Idempotency-Key")
		c.Authorization = req.Extra.Header.Get("Authorization")
	}
	if v, ok := req.Params.Meta["exagent.io/idempotency-key"].(string); ok {
		c.MetaKey = v
	}
	c.RequestState = req.Params.RequestState
	if len(req.Params.InputResponses) > 0 {
		b, _ := json.Marshal(req.Params.InputResponses)
		c.InputResponses = string(b)
	}
	if v, ok := req.Params.Meta["exagent.io/input-round"].(float64); ok {
		c.InputRound = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	n := 0
	for _, x := range s.calls {
		if x.Tool == c.Tool {
			n++
		}
	}
	return n
}

// EchoSchema is echo's initial input schema: {text: string}, required.
func EchoSchema() map[string]any {
	return map[string]any{"type": "object", "required": []any{"text"},
		"properties": map[string]any{"text": map[string]any{"type": "string"}}}
}

func objectSchema() map[string]any { return map[string]any{"type": "object"} }

func jsonUnmarshal(raw []byte, into any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}
