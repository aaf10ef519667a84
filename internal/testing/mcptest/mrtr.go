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
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools that ask for input the MCP 2026-07-28 way: the first tools/call is
// answered with input requests and an opaque requestState, and only a
// retry carrying the answers (inputResponses) and that state completes.
//   - form: a form elicitation {region: eu|us}; completes with
//     "form: region=R action=A state=S";
//   - visit: a URL elicitation; completes with "visit: A";
//   - twice: asks one question, then another, then completes;
//   - sample: asks the client's model for a completion (sampling/createMessage,
//     maxTokens 10, "hi"); completes with "sample: TEXT state=S" from the
//     CreateMessageResult of the retry.
func (s *Server) addInputTools() {
	regionSchema := map[string]any{"type": "object", "required": []any{"region"},
		"properties": map[string]any{"region": map[string]any{"type": "string", "enum": []any{"eu", "us"}}}}
	s.MCP.AddTool(&mcp.Tool{Name: "form", Description: "Asks for a region.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			r, ok := req.Params.InputResponses["region"].(*mcp.ElicitResult)
			if !ok || req.Params.RequestState != "st-1" {
				return &mcp.CallToolResult{RequestState: "st-1", InputRequests: mcp.InputRequestMap{
					"region": &mcp.ElicitParams{Mode: "form", Message: "Which region?", RequestedSchema: regionSchema}}}, nil
			}
			return text(fmt.Sprintf("form: region=%v action=%s state=%s", r.Content["region"], r.Action, req.Params.RequestState)), nil
		})
	s.MCP.AddTool(&mcp.Tool{Name: "visit", Description: "Asks to visit a page.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			r, ok := req.Params.InputResponses["consent"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{RequestState: "v-1", InputRequests: mcp.InputRequestMap{
					"consent": &mcp.ElicitParams{Mode: "url", Message: "Grant access to the repository",
						URL: "https://auth.example.com/consent?app=mcptest", ElicitationID: "e-1"}}}, nil
			}
			return text("visit: " + r.Action), nil
		})
	s.MCP.AddTool(&mcp.Tool{Name: "twice", Description: "Asks two questions, one after the other.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			name := map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string"}}}
			switch req.Params.RequestState {
			case "":
				return &mcp.CallToolResult{RequestState: "t-1", InputRequests: mcp.InputRequestMap{
					"a": &mcp.ElicitParams{Message: "First?", RequestedSchema: name}}}, nil
			case "t-1":
				a, _ := req.Params.InputResponses["a"].(*mcp.ElicitResult)
				if a == nil {
					return nil, fmt.Errorf("no answer to a")
				}
				return &mcp.CallToolResult{RequestState: "t-2:" + fmt.Sprint(a.Content["v"]), InputRequests: mcp.InputRequestMap{
					"b": &mcp.ElicitParams{Message: "Second?", RequestedSchema: name}}}, nil
			}
			b, _ := req.Params.InputResponses["b"].(*mcp.ElicitResult)
			if b == nil {
				return nil, fmt.Errorf("no answer to b")
			}
			return text(fmt.Sprintf("twice: %s then %v", req.Params.RequestState, b.Content["v"])), nil
		})
	s.MCP.AddTool(&mcp.Tool{Name: "sample", Description: "Asks the client's model.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.record(req)
			//nolint:staticcheck // sampling is deprecated since 2026-07-28 (SEP-2577); servers still ask
			if r, ok := req.Params.InputResponses["llm"].(*mcp.CreateMessageWithToolsResult); ok && req.Params.RequestState == "s-1" {
				var t *mcp.TextContent
				if len(r.Content) == 1 {
					t, _ = r.Content[0].(*mcp.TextContent)
				}
				if t == nil || r.Role != "assistant" {
					return nil, fmt.Errorf("the sampling answer is not an assistant's text: %+v", r)
				}
				return text(fmt.Sprintf("sample: %s state=%s", t.Text, req.Params.RequestState)), nil
			}
			return &mcp.CallToolResult{RequestState: "s-1", InputRequests: mcp.InputRequestMap{
				//nolint:staticcheck // sampling is deprecated since 2026-07-28 (SEP-2577): a server that still asks is what this tool plays
				"llm": &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}}}, nil
		})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
