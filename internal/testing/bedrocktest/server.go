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

package bedrocktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// Block is one content block of a Converse message.
type Block struct {
	Text    string `json:"text,omitempty"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse,omitempty"`
	ToolResult *struct {
		ToolUseID string `json:"toolUseId"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"toolResult,omitempty"`
}

// Request is what one Converse request carried.
type Request struct {
	Header   http.Header
	ModelID  string
	System   []struct{ Text string }
	Messages []struct {
		Role    string  `json:"role"`
		Content []Block `json:"content"`
	}
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name        string `json:"name"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
	} `json:"toolConfig"`
	InferenceConfig *struct {
		MaxTokens int `json:"maxTokens"`
	} `json:"inferenceConfig"`
}

// ToolUse is one toolUse of a reply.
type ToolUse struct {
	ID, Name string
	Input    any
}

// Reply is the server's answer.
type Reply struct {
	Text       string
	ToolUses   []ToolUse
	StopReason string // end_turn, or tool_use when there are tool uses
	Input      int
	Output     int
	CacheRead  int
	CacheWrite int
	Throttle   bool // answer ThrottlingException (HTTP 429)
}

// Server is the test server.
type Server struct {
	URL     string
	Region  string
	srv     *httptest.Server
	respond func(*Request) Reply

	mu  sync.Mutex
	log []*Request
}

// Start serves Converse for region.
func Start(region string, respond func(*Request) Reply) *Server {
	s := &Server{Region: region, respond: respond}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Endpoint is the regional Bedrock runtime endpoint of the server's
// region: what an Agent's baseURL may name (model.CheckBedrockEndpoint).
// A client reaches the server there through Transport.
func (s *Server) Endpoint() string { return "https://bedrock-runtime." + s.Region + ".amazonaws.com" }

// Transport sends the requests for Endpoint's host to the server (plain
// http on 127.0.0.1, through next, so under next's egress policy) and
// every other request to next unchanged: the test stands in for AWS's
// DNS and TLS, not for the provider's endpoint rule.
func (s *Server) Transport(next http.RoundTripper) http.RoundTripper {
	return redirect{from: strings.TrimPrefix(s.Endpoint(), "https://"), to: s.URL, next: next}
}

type redirect struct {
	from, to string
	next     http.RoundTripper
}

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != r.from {
		return r.next.RoundTrip(req)
	}
	to, err := url.Parse(r.to)
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = to.Scheme, to.Host
	return r.next.RoundTrip(out)
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests are the requests received.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.log...)
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"message": msg})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// /model/{modelId}/converse, the id path-escaped.
	path := r.URL.EscapedPath()
	if r.Method != http.MethodPost || !strings.HasPrefix(path, "/model/") || !strings.HasSuffix(path, "/converse") {
		fail(w, http.StatusNotFound, "UnknownOperationException", r.Method+" "+path)
		return
	}
	id, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "/model/"), "/converse"))
	if err != nil {
		fail(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=") || !strings.Contains(auth, "/"+s.Region+"/bedrock/aws4_request") ||
		!strings.Contains(auth, "SignedHeaders=") || !strings.Contains(auth, "Signature=") || r.Header.Get("X-Amz-Date") == "" {
		fail(w, http.StatusForbidden, "UnrecognizedClientException", "not SigV4-signed for bedrock in "+s.Region+": "+auth)
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := &Request{Header: r.Header.Clone(), ModelID: id}
	if err := json.Unmarshal(body, req); err != nil {
		fail(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	if err := check(req); err != nil {
		fail(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	s.mu.Lock()
	s.log = append(s.log, req)
	s.mu.Unlock()
	reply := s.respond(req)
	if reply.Throttle {
		fail(w, http.StatusTooManyRequests, "ThrottlingException", "Too many requests, please wait before trying again.")
		return
	}
	content := []any{}
	if reply.Text != "" {
		content = append(content, map[string]any{"text": reply.Text})
	}
	for _, tu := range reply.ToolUses {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": tu.ID, "name": tu.Name, "input": tu.Input}})
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(reply.ToolUses) > 0 {
			stop = "tool_use"
		}
	}
	usage := map[string]any{"inputTokens": reply.Input, "outputTokens": reply.Output, "totalTokens": reply.Input + reply.Output}
	if reply.CacheRead > 0 || reply.CacheWrite > 0 {
		usage["cacheReadInputTokens"], usage["cacheWriteInputTokens"] = reply.CacheRead, reply.CacheWrite
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stop, "usage": usage, "metrics": map[string]any{"latencyMs": 1},
	})
}

func check(r *Request) error {
	if len(r.Messages) == 0 || r.Messages[0].Role != "user" {
		return fmt.Errorf("the first message must be the user's")
	}
	pending := map[string]bool{}
	for i, m := range r.Messages {
		if i > 0 && m.Role == r.Messages[i-1].Role {
			return fmt.Errorf("messages[%d]: roles must alternate", i)
		}
		for _, b := range m.Content {
			switch {
			case b.ToolUse != nil:
				pending[b.ToolUse.ToolUseID] = true
			case b.ToolResult != nil:
				if !pending[b.ToolResult.ToolUseID] {
					return fmt.Errorf("messages[%d]: toolResult %q answers no toolUse", i, b.ToolResult.ToolUseID)
				}
				delete(pending, b.ToolResult.ToolUseID)
			}
		}
		if m.Role == "user" && len(pending) > 0 && i > 0 {
			return fmt.Errorf("messages[%d]: toolUse ids without a toolResult: %v", i, pending)
		}
	}
	return nil
}
