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

package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/anthropictest"
	"github.com/exagent-io/exagent/loop"
)

func newAnthropic(t *testing.T, srv *anthropictest.Server, mut ...func(*AnthropicConfig)) *Anthropic {
	t.Helper()
	cfg := AnthropicConfig{BaseURL: srv.URL, Model: "claude-test", APIKey: "sk-ant", HTTPClient: loopbackOnly(t)}
	for _, m := range mut {
		m(&cfg)
	}
	p, err := NewAnthropic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAnthropicWire: one request through the SDK to our Messages server —
// the system prompt, tools and transcript as sent (the previous turn's
// parallel tool results in one user message), the key as the SDK sends it; two
// parallel tool uses come back as two calls with the model's ids, and the
// usage with its cache parts.
func TestAnthropicWire(t *testing.T) {
	srv := anthropictest.Start(func(*anthropictest.Request) anthropictest.Reply {
		return anthropictest.Reply{Text: "checking both", ToolUses: []anthropictest.ToolUse{
			{ID: "toolu_a", Name: "lookup", Input: map[string]any{"id": 1}},
			{ID: "toolu_b", Name: "lookup", Input: map[string]any{"id": 2}},
		}}
	})
	defer srv.Close()
	p := newAnthropic(t, srv, func(c *AnthropicConfig) { c.MaxTokens = 300 })
	resp, err := p.Complete(context.Background(), loop.ModelRequest{
		Messages: []exagentv1.Message{
			{Role: exagentv1.RoleSystem, Content: "You look things up."},
			{Role: exagentv1.RoleUser, Content: "find 0 and 9"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c0", Name: "lookup", Arguments: `{"id":0}`}, {ID: "c9", Name: "lookup", Arguments: `{"id":9}`}}},
			{Role: exagentv1.RoleTool, ToolCallID: "c0", Content: "zero"},
			{Role: exagentv1.RoleTool, ToolCallID: "c9", Content: "nine"},
		},
		Tools: []loop.ToolDef{{Name: "lookup", Description: "looks up", Parameters: json.RawMessage(`{"properties":{"id":{"type":"integer"}},"type":"object"}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []exagentv1.MessageToolCall{{ID: "toolu_a", Name: "lookup", Arguments: `{"id":1}`}, {ID: "toolu_b", Name: "lookup", Arguments: `{"id":2}`}}
	if diff := cmp.Diff(wantCalls, resp.ToolCalls); diff != "" || resp.Content != "checking both" {
		t.Errorf("content %q, calls (-want +got):\n%s", resp.Content, diff)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d", len(reqs))
	}
	r := reqs[0]
	// The SDK (v2) sends the API key as a Bearer token.
	if r.Header.Get("Authorization") != "Bearer sk-ant" || r.MaxTokens != 300 || r.System != "You look things up." {
		t.Errorf("authorization %q max_tokens %d system %q", r.Header.Get("Authorization"), r.MaxTokens, r.System)
	}
	if roles := fmt.Sprintf("%d %s %d", len(r.Messages), r.Messages[2].Role, len(r.Messages[2].Content)); roles != "3 user 2" {
		t.Errorf("messages: %s, want 3 with both tool results in the last user message", roles)
	}
	u := r.Usage
	if resp.PromptTokens != u.Input+u.CacheCreation+u.CacheRead || resp.CompletionTokens != u.Output ||
		resp.CacheCreationTokens != u.CacheCreation || resp.CacheReadTokens != u.CacheRead {
		t.Errorf("response usage %+v, server billed %+v", resp, u)
	}
}

// TestAnthropicStops: stop_reason max_tokens and refusal are StopErrors
// with their run reasons; a 429 past the retries is a RateLimitedError.
func TestAnthropicStops(t *testing.T) {
	cases := map[string]struct {
		reply      anthropictest.Reply
		wantReason string
	}{
		"max_tokens": {anthropictest.Reply{Text: "half an ans", StopReason: "max_tokens"}, exagentv1.ReasonModelMaxTokens},
		"refusal":    {anthropictest.Reply{StopReason: "refusal"}, exagentv1.ReasonModelRefused},
		"429":        {anthropictest.Reply{Status: 429, RetryAfter: "7"}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := anthropictest.Start(func(*anthropictest.Request) anthropictest.Reply { return tc.reply })
			defer srv.Close()
			p := newAnthropic(t, srv, func(c *AnthropicConfig) { c.Retry.MaxRetries = -1 })
			_, err := p.Complete(context.Background(), loop.ModelRequest{Messages: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "hi"}}})
			var se *StopError
			var rl *RateLimitedError
			switch {
			case tc.wantReason != "":
				if !errors.As(err, &se) || se.Reason != tc.wantReason {
					t.Errorf("err = %v, want a StopError %s", err, tc.wantReason)
				}
			case !errors.As(err, &rl) || rl.Status != 429 || rl.RetryAfter.Seconds() != 7:
				t.Errorf("err = %v, want a RateLimitedError 429 after 7s", err)
			}
		})
	}
}

// longRun is a transcript of turns tool calls, each with a result of
// resultBytes: what a long run sends at its last turn.
func longRun(turns, resultBytes int) []exagentv1.Message {
	msgs := []exagentv1.Message{
		{Role: exagentv1.RoleSystem, Content: strings.Repeat("You read logs and report what broke. ", 40)},
		{Role: exagentv1.RoleUser, Content: "What broke last night?"},
	}
	for i := range turns {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			exagentv1.Message{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: id, Name: "read_logs", Arguments: fmt.Sprintf(`{"page":%d}`, i)}}},
			exagentv1.Message{Role: exagentv1.RoleTool, ToolCallID: id, Content: strings.Repeat(fmt.Sprintf("%d log line ", i%10), resultBytes/11)})
	}
	return msgs
}

var readLogs = []loop.ToolDef{{Name: "read_logs", Description: "reads a page of logs",
	Parameters: json.RawMessage(`{"properties":{"page":{"type":"integer"}},"required":["page"],"type":"object"}`)}}

func readLogsReply(r *anthropictest.Request) anthropictest.Reply {
	n := (len(r.Messages) - 1) / 2
	return anthropictest.Reply{ToolUses: []anthropictest.ToolUse{{ID: fmt.Sprintf("toolu_%d", n), Name: "read_logs", Input: map[string]any{"page": n}}}, Output: 20}
}

// TestAnthropicCachePrefixStable: from turn to turn, the bytes up to the
// breakpoint that closes the previous request's transcript are the bytes
// the previous request cached, so each turn reads all of it and writes
// only the new tail; the system prompt and tools are one breakpoint.
func TestAnthropicCachePrefixStable(t *testing.T) {
	srv := anthropictest.Start(readLogsReply)
	defer srv.Close()
	p := newAnthropic(t, srv)
	const turns = 6
	for turn := range turns {
		if _, err := p.Complete(context.Background(), loop.ModelRequest{Messages: longRun(turn, 40<<10), Tools: readLogs}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1], reqs[i]
		if n := len(cur.Breakpoints); n < 2 || n > 4 {
			t.Fatalf("turn %d: %d breakpoints, want 2 to 4", i, n)
		}
		// The previous request's last breakpoint is this one's second last.
		want := prev.Prefixes[len(prev.Prefixes)-1]
		got := cur.Prefixes[len(cur.Prefixes)-2]
		if string(got) != string(want) {
			t.Fatalf("turn %d: the cached prefix changed (%d bytes then, %d now)", i, len(want), len(got))
		}
		if cur.Usage.CacheRead != prev.Usage.CacheRead+prev.Usage.CacheCreation {
			t.Errorf("turn %d: read %d from the cache, want all %d the previous turn cached", i, cur.Usage.CacheRead,
				prev.Usage.CacheRead+prev.Usage.CacheCreation)
		}
		if tail := cur.Usage.CacheCreation + cur.Usage.Input; tail > 12_000 {
			t.Errorf("turn %d: %d tokens not read from the cache, want about one 40 KiB result's", i, tail)
		}
	}
}
