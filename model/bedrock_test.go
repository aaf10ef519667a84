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
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/bedrocktest"
	"github.com/exagent-io/exagent/loop"
)

var testAWS = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")

func newBedrock(t *testing.T, srv *bedrocktest.Server, mut ...func(*BedrockConfig)) *Bedrock {
	t.Helper()
	// The Agent's baseURL names Bedrock's regional endpoint (the only kind
	// the provider accepts); the client's transport stands in for AWS's
	// DNS and sends it to our server.
	cfg := BedrockConfig{Region: srv.Region, Model: "anthropic.claude-test-v1:0", BaseURL: srv.Endpoint(),
		HTTPClient: &http.Client{Transport: srv.Transport(loopbackOnly(t).Transport)}, Credentials: testAWS}
	for _, m := range mut {
		m(&cfg)
	}
	p, err := NewBedrock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBedrockConverse: one Converse request to our server through the
// endpoint override — SigV4-signed for bedrock in the Agent's region with
// the credentials' key id, the system prompt, tools and transcript as
// Converse wants them (a batch's results in one user message); two
// toolUse blocks come back as two calls with their ids, and the usage.
func TestBedrockConverse(t *testing.T) {
	srv := bedrocktest.Start("eu-west-1", func(*bedrocktest.Request) bedrocktest.Reply {
		return bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{
			{ID: "tooluse_a", Name: "lookup", Input: map[string]any{"id": 1}},
			{ID: "tooluse_b", Name: "lookup", Input: map[string]any{"id": 2}},
		}, Input: 30, Output: 12, CacheRead: 100, CacheWrite: 5}
	})
	defer srv.Close()
	p := newBedrock(t, srv, func(c *BedrockConfig) { c.MaxTokens = aws.Int64(256) })
	resp, err := p.Complete(context.Background(), loop.ModelRequest{
		Messages: []exagentv1.Message{
			{Role: exagentv1.RoleSystem, Content: "You look things up."},
			{Role: exagentv1.RoleUser, Content: "find 0 and 9"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c0", Name: "lookup", Arguments: `{"id":0}`}, {ID: "c9", Name: "lookup", Arguments: `{"id":9}`}}},
			{Role: exagentv1.RoleTool, ToolCallID: "c0", Content: "zero"},
			{Role: exagentv1.RoleTool, ToolCallID: "c9", Content: "nine"},
		},
		Tools: []loop.ToolDef{{Name: "lookup", Parameters: json.RawMessage(`{"properties":{"id":{"type":"integer"}},"type":"object"}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := loop.ModelResponse{ToolCalls: []exagentv1.MessageToolCall{{ID: "tooluse_a", Name: "lookup", Arguments: `{"id":1}`}, {ID: "tooluse_b", Name: "lookup", Arguments: `{"id":2}`}},
		PromptTokens: 135, CompletionTokens: 12, CacheReadTokens: 100, CacheCreationTokens: 5}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d", len(reqs))
	}
	r := reqs[0]
	if r.ModelID != "anthropic.claude-test-v1:0" || len(r.System) != 1 || r.System[0].Text != "You look things up." ||
		r.InferenceConfig == nil || r.InferenceConfig.MaxTokens != 256 || len(r.ToolConfig.Tools) != 1 {
		t.Errorf("model %q system %+v inference %+v tools %+v", r.ModelID, r.System, r.InferenceConfig, r.ToolConfig)
	}
	if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "Credential=AKIDEXAMPLE/") || r.Header.Get("X-Amz-Security-Token") != "session-token" {
		t.Errorf("Authorization %q, want SigV4 with the credentials' key id and session token", auth)
	}
	if n := len(r.Messages); n != 3 || len(r.Messages[2].Content) != 2 {
		t.Errorf("messages %d, want 3 with both results in the last", n)
	}
}

// TestBedrockFailures: throttling past the SDK's retries is a rate limit;
// max_tokens and a guardrail end the run with their reasons; a Bedrock
// model without a region is a ConfigError naming the field.
func TestBedrockFailures(t *testing.T) {
	cases := map[string]struct {
		reply      bedrocktest.Reply
		wantReason string
	}{
		"throttled":  {bedrocktest.Reply{Throttle: true}, ""},
		"max_tokens": {bedrocktest.Reply{Text: "half", StopReason: "max_tokens"}, exagentv1.ReasonModelMaxTokens},
		"guardrail":  {bedrocktest.Reply{StopReason: "guardrail_intervened"}, exagentv1.ReasonModelRefused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := bedrocktest.Start("us-east-1", func(*bedrocktest.Request) bedrocktest.Reply { return tc.reply })
			defer srv.Close()
			p := newBedrock(t, srv, func(c *BedrockConfig) { c.Retry.MaxRetries = -1 })
			_, err := p.Complete(context.Background(), loop.ModelRequest{Messages: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "hi"}}})
			var se *StopError
			var rl *RateLimitedError
			switch {
			case tc.wantReason != "":
				if !errors.As(err, &se) || se.Reason != tc.wantReason {
					t.Errorf("err = %v, want a StopError %s", err, tc.wantReason)
				}
			case !errors.As(err, &rl):
				t.Errorf("err = %v, want a RateLimitedError", err)
			}
		})
	}
	_, err := For(context.Background(), &exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m"}, secrets(nil), Options{})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "spec.model.region" {
		t.Errorf("no region: %v, want a ConfigError on spec.model.region", err)
	}
}
