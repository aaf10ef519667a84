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

package anthropictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Published accounting (prompt caching): tokens written to the cache cost
// 1.25× base input, tokens read from it 0.1×; a prefix shorter than the
// model's minimum (1024 tokens for most models) is not cached.
const (
	WriteMultiplier = 1.25
	ReadMultiplier  = 0.1
	MinCacheTokens  = 1024
	// BytesPerToken is the server's tokenizer: a token per 4 bytes of the
	// canonical JSON of a block, the usual rule of thumb for English text.
	BytesPerToken = 4
)

// Usage is one request's bill, as the API reports it.
type Usage struct {
	Input, CacheCreation, CacheRead, Output int64
}

// Billed is the input side of the bill in base-input-token units.
func (u Usage) Billed() float64 {
	return float64(u.Input) + WriteMultiplier*float64(u.CacheCreation) + ReadMultiplier*float64(u.CacheRead)
}

// Block is one content block as the server saw it.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// Message is one message of a request.
type Message struct {
	Role    string
	Content []Block
}

// Request is what one request carried.
type Request struct {
	Header    http.Header
	Model     string
	MaxTokens int64
	System    string
	Tools     []string
	Messages  []Message
	// Breakpoints are the cumulative token counts at each cache_control
	// breakpoint, in order; Prefixes the canonical bytes (cache_control
	// left out) of the request up to each.
	Breakpoints []int64
	Prefixes    [][]byte
	Usage       Usage
}

// ToolUse is one tool_use block of a reply.
type ToolUse struct {
	ID, Name string
	Input    any
}

// Reply is the server's answer to a request.
type Reply struct {
	Text       string
	ToolUses   []ToolUse
	StopReason string // end_turn when empty (tool_use when there are tool uses)
	Output     int64  // output tokens (default: a token per 4 bytes of the reply)
	// Status, when set, answers that HTTP status with an error body instead
	// (RetryAfter as its header, when set).
	Status     int
	RetryAfter string
}

// Server is the test server.
type Server struct {
	URL string
	srv *httptest.Server
	// Respond decides each answer (set before the first request).
	Respond func(r *Request) Reply

	mu    sync.Mutex
	cache map[[32]byte]bool
	log   []*Request
}

// Start serves on 127.0.0.1 (tls: over httptest's TLS certificate).
func Start(respond func(r *Request) Reply) *Server {
	s := &Server{Respond: respond, cache: map[[32]byte]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests are the requests received, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.log...)
}

type wire struct {
	Model     string            `json:"model"`
	MaxTokens int64             `json:"max_tokens"`
	System    []json.RawMessage `json:"system"`
	Tools     []json.RawMessage `json:"tools"`
	Messages  []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		apiError(w, http.StatusNotFound, "not_found_error", r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version header is required")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	var in wire
	if err := json.Unmarshal(body, &in); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req, err := s.parse(&in)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req.Header = r.Header.Clone()
	reply := s.Respond(req)
	if reply.Status != 0 {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		s.record(req)
		apiError(w, reply.Status, "rate_limit_error", "slow down")
		return
	}
	s.bill(req, &in)
	content := []any{}
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for _, tu := range reply.ToolUses {
		content = append(content, map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": tu.Input})
	}
	stop := reply.StopReason
	switch {
	case stop != "":
	case len(reply.ToolUses) > 0:
		stop = "tool_use"
	default:
		stop = "end_turn"
	}
	out, _ := json.Marshal(content)
	req.Usage.Output = reply.Output
	if req.Usage.Output == 0 {
		req.Usage.Output = int64(len(out)+BytesPerToken-1) / BytesPerToken
	}
	s.record(req)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_%d", len(s.Requests())), "type": "message", "role": "assistant", "model": in.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": req.Usage.Input, "output_tokens": req.Usage.Output,
			"cache_creation_input_tokens": req.Usage.CacheCreation, "cache_read_input_tokens": req.Usage.CacheRead},
	})
}

func (s *Server) record(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, r)
}

// parse checks the request as the API would and reads what tests look at.
func (s *Server) parse(in *wire) (*Request, error) {
	req := &Request{Model: in.Model, MaxTokens: in.MaxTokens}
	if in.Model == "" || in.MaxTokens <= 0 {
		return nil, fmt.Errorf("model and a positive max_tokens are required")
	}
	for _, raw := range in.System {
		var b Block
		if err := json.Unmarshal(raw, &b); err != nil || b.Type != "text" {
			return nil, fmt.Errorf("system: text blocks only")
		}
		req.System += b.Text
	}
	for _, raw := range in.Tools {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" || len(t.InputSchema) == 0 {
			return nil, fmt.Errorf("tools: a name and an input_schema each")
		}
		req.Tools = append(req.Tools, t.Name)
	}
	if len(in.Messages) == 0 || in.Messages[0].Role != "user" {
		return nil, fmt.Errorf("messages: the first must be the user's")
	}
	var pending map[string]bool // tool_use ids the next user message must answer
	for i, m := range in.Messages {
		if i > 0 && m.Role == in.Messages[i-1].Role {
			return nil, fmt.Errorf("messages[%d]: roles must alternate", i)
		}
		msg := Message{Role: m.Role}
		if len(m.Content) == 0 {
			return nil, fmt.Errorf("messages[%d]: empty content", i)
		}
		for _, raw := range m.Content {
			var b Block
			if err := json.Unmarshal(raw, &b); err != nil {
				return nil, fmt.Errorf("messages[%d]: %v", i, err)
			}
			msg.Content = append(msg.Content, b)
		}
		switch m.Role {
		case "assistant":
			pending = map[string]bool{}
			for _, b := range msg.Content {
				if b.Type == "tool_use" {
					pending[b.ID] = true
				}
			}
		case "user":
			for _, b := range msg.Content {
				if b.Type == "tool_result" {
					if !pending[b.ToolUseID] {
						return nil, fmt.Errorf("messages[%d]: tool_result for %q, which no tool_use of the previous message asked", i, b.ToolUseID)
					}
					delete(pending, b.ToolUseID)
				}
			}
			if len(pending) > 0 {
				return nil, fmt.Errorf("messages[%d]: tool_use ids without a tool_result: %v", i, pending)
			}
		default:
			return nil, fmt.Errorf("messages[%d]: role %q", i, m.Role)
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// bill applies the caching rules: the blocks are read in the API's order
// (tools, system, messages); the longest prefix ending at or before the
// last breakpoint that an earlier request wrote is read from the cache,
// the rest up to the last breakpoint is written, what follows is input.
func (s *Server) bill(req *Request, in *wire) {
	var blocks []json.RawMessage
	blocks = append(blocks, in.Tools...)
	blocks = append(blocks, in.System...)
	for _, m := range in.Messages {
		for _, c := range m.Content {
			blocks = append(blocks, append([]byte(`"`+m.Role+`":`), c...))
		}
	}
	h := sha256.New()
	var prefix bytes.Buffer
	var total int64
	cum := make([]int64, len(blocks))
	sums := make([][32]byte, len(blocks))
	last := -1
	for i, b := range blocks {
		canon, marked := strip(b)
		prefix.Write(canon)
		h.Write(canon)
		total += int64(len(canon)+BytesPerToken-1) / BytesPerToken
		cum[i] = total
		copy(sums[i][:], h.Sum(nil))
		if marked {
			last = i
			req.Breakpoints = append(req.Breakpoints, total)
			req.Prefixes = append(req.Prefixes, bytes.Clone(prefix.Bytes()))
		}
	}
	if len(req.Breakpoints) > 4 {
		req.Usage = Usage{Input: total} // the API refuses this; tests see the count
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var read int64
	for j := last; j >= 0; j-- {
		if s.cache[sums[j]] {
			read = cum[j]
			break
		}
	}
	var written int64
	if last >= 0 && cum[last] >= MinCacheTokens {
		written = cum[last] - read
		for i := range blocks {
			if _, marked := strip(blocks[i]); marked && cum[i] >= MinCacheTokens {
				s.cache[sums[i]] = true
			}
		}
	}
	req.Usage = Usage{CacheRead: read, CacheCreation: written, Input: total - read - written}
}

// strip is the canonical bytes of a block without its cache_control, and
// whether it had one.
func strip(b json.RawMessage) ([]byte, bool) {
	role := []byte{}
	if i := bytes.Index(b, []byte(`":{`)); i > 0 && b[0] == '"' {
		role, b = b[:i+2], b[i+2:]
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return append(role, b...), false
	}
	_, marked := v["cache_control"]
	delete(v, "cache_control")
	out, _ := json.Marshal(v)
	return append(bytes.Clone(role), out...), marked
}
