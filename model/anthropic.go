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
	"net/http"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// AnthropicConfig configures the Anthropic provider (the Messages API,
// through the official SDK). Everything comes from the current Agent and
// its Secrets, never from the run.
type AnthropicConfig struct {
	BaseURL     string
	Model       string
	APIKey      string
	Temperature string
	// MaxTokens is the API's required max_tokens (AnthropicMaxTokens
	// chooses it from the Agent).
	MaxTokens  int64
	HTTPClient *http.Client
	Retry      RetryOptions
	Headers    map[string]string
	CABundle   []byte
	// NoCache leaves out the cache_control breakpoints (the benchmark's
	// baseline; an Agent always caches).
	NoCache bool
}

// Defaults of max_tokens, which the Messages API requires: the Agent's
// maxCompletionTokens, else its limits.maxTokens capped at
// MaxDefaultAnthropicTokens, else DefaultAnthropicMaxTokens.
const (
	DefaultAnthropicMaxTokens = 4096
	MaxDefaultAnthropicTokens = 16384
)

// AnthropicMaxTokens is max_tokens for spec under limits.
func AnthropicMaxTokens(spec *exagentv1.ModelSpec, limits *exagentv1.LimitsSpec) int64 {
	switch {
	case spec.MaxCompletionTokens != nil:
		return *spec.MaxCompletionTokens
	case limits != nil && limits.MaxTokens != nil && *limits.MaxTokens > 0:
		return min(*limits.MaxTokens, MaxDefaultAnthropicTokens)
	}
	return DefaultAnthropicMaxTokens
}

// Anthropic speaks the Messages API. Tool use ids are the journal's call
// ids; parallel tool use is one batch, as any turn with several calls;
// stop_reason max_tokens and refusal are errors with their own reasons.
// Prompt caching: cache_control breakpoints on the stable prefix — the
// system prompt (with the tools before it), the end of the transcript the
// previous request sent, and the end of this one — so turn N is billed
// in full only for what turn N-1 did not send (cache.go of the test
// server applies Anthropic's accounting).
type Anthropic struct {
	cfg    AnthropicConfig
	client anthropic.Client
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic builds the provider. The SDK's environment defaults
// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles) are never read: the
// manager's own environment must not reach an endpoint an Agent names.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: model name is required")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultAnthropicMaxTokens
	}
	cfg.Retry = cfg.Retry.withDefaults()
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithMaxRetries(cfg.Retry.MaxRetries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	hc, err := answerClient(cfg.HTTPClient, cfg.CABundle, cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	opts = append(opts, option.WithHTTPClient(hc))
	return &Anthropic{cfg: cfg, client: anthropic.NewClient(opts...)}, nil
}

// StopError is an answer the run cannot use: the model ran out of
// max_tokens, or refused. Reason is the run's status.reason.
type StopError struct {
	Reason string
	Detail string
}

func (e *StopError) Error() string { return e.Detail }

// Complete sends one Messages request.
func (a *Anthropic) Complete(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	params, err := a.Params(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Retry.Timeout)
	defer cancel()
	guard := &retryGuard{stop: cancel, bundle: len(a.cfg.CABundle) > 0}
	opts := []option.RequestOption{option.WithMiddleware(guard.middleware)}
	if a.cfg.Temperature != "" {
		// Not a field of the SDK's params (v2): set in the body as sent.
		t, err := strconv.ParseFloat(a.cfg.Temperature, 64)
		if err != nil {
			return loop.ModelResponse{}, fmt.Errorf("anthropic: temperature %q: %w", a.cfg.Temperature, err)
		}
		opts = append(opts, option.WithJSONSet("temperature", t))
	}
	msg, err := a.client.Messages.New(ctx, params, opts...)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("anthropic messages (model %s): %w", a.cfg.Model, guard.wrap(err, a.cfg.Retry))
	}
	u := msg.Usage
	out := loop.ModelResponse{
		// The whole prompt, as OpenAI counts it: the part read from the
		// cache and the part written to it are prompt tokens too.
		PromptTokens:        u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CompletionTokens:    u.OutputTokens,
		CacheCreationTokens: u.CacheCreationInputTokens,
		CacheReadTokens:     u.CacheReadInputTokens,
	}
	switch msg.StopReason {
	case anthropic.StopReasonMaxTokens:
		return out, &StopError{Reason: exagentv1.ReasonModelMaxTokens, Detail: fmt.Sprintf(
			"the model stopped at max_tokens (%d) before finishing its answer; raise spec.model.maxCompletionTokens", a.cfg.MaxTokens)}
	case anthropic.StopReasonRefusal:
		return out, &StopError{Reason: exagentv1.ReasonModelRefused, Detail: "the model refused to answer (stop_reason refusal)"}
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Content += b.Text
		case "tool_use":
			args := string(b.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, exagentv1.MessageToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	return out, nil
}

// Params is the Messages request for req (exported for the benchmark and
// the prefix test, which check what is sent).
func (a *Anthropic) Params(req loop.ModelRequest) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(a.cfg.Model), MaxTokens: a.cfg.MaxTokens}
	if req.MaxTokens > 0 && req.MaxTokens < p.MaxTokens {
		p.MaxTokens = req.MaxTokens // a sampling request's maxTokens
	}
	for _, t := range req.Tools {
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(t.Parameters) > 0 {
			schema = json.RawMessage(t.Parameters)
		}
		// The canonical schema bytes, as they are: the same bytes every
		// turn, so the cached prefix matches (the SDK's map of extra
		// fields would serialize in random order).
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	leading := true
	for _, m := range req.Messages {
		if m.Role == exagentv1.RoleSystem && leading {
			p.System = append(p.System, anthropic.TextBlockParam{Text: m.Content})
			continue
		}
		leading = false
		if err := appendMessage(&p.Messages, m); err != nil {
			return p, err
		}
	}
	if !a.cfg.NoCache {
		breakpoints(&p)
	}
	return p, nil
}

// appendMessage adds m to msgs as the Messages API wants them: user and
// tool results alternate with assistant turns, so consecutive user-side
// messages (the results of one batch, a note after them) are one message.
func appendMessage(msgs *[]anthropic.MessageParam, m exagentv1.Message) error {
	var blocks []anthropic.ContentBlockParamUnion
	user := true
	switch m.Role {
	case exagentv1.RoleUser, exagentv1.RoleSystem:
		// A system message past the first turns (a note of the engine's)
		// is the user side's: the system prompt is the cached prefix.
		blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(m.Content)))
	case exagentv1.RoleTool:
		blocks = append(blocks, anthropic.NewToolResultBlock(m.ToolCallID, nonEmpty(m.Content), false))
	case exagentv1.RoleAssistant:
		user = false
		if m.Content != "" || len(m.ToolCalls) == 0 {
			blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(m.Content)))
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			if !json.Valid([]byte(args)) {
				return fmt.Errorf("anthropic: tool call %q arguments are not JSON", tc.ID)
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, json.RawMessage(args), tc.Name))
		}
	default:
		return fmt.Errorf("anthropic: message role %q not supported", m.Role)
	}
	if n := len(*msgs); n > 0 {
		prev := &(*msgs)[n-1]
		switch {
		case user && prev.OfUser != nil:
			prev.OfUser.Content = append(prev.OfUser.Content, blocks...)
			return nil
		case !user && prev.OfAssistant != nil:
			prev.OfAssistant.Content = append(prev.OfAssistant.Content, blocks...)
			return nil
		}
	}
	if user {
		*msgs = append(*msgs, anthropic.NewUserMessage(blocks...))
	} else {
		*msgs = append(*msgs, anthropic.NewAssistantMessage(blocks...))
	}
	return nil
}

// nonEmpty: the API refuses an empty text block.
func nonEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// breakpoints marks the stable prefix with cache_control (at most 3 of
// the API's 4): the end of the system prompt (tools come before it, so
// both are cached; the last tool when there is no system prompt), the end
// of what the previous request sent (the message before the last
// assistant turn: read from the cache), and the end of this request
// (written, for the next turn to read).
func breakpoints(p *anthropic.MessageNewParams) {
	mark := func(c *anthropic.CacheControlEphemeralParam) {
		if c != nil {
			*c = anthropic.NewCacheControlEphemeralParam()
		}
	}
	switch {
	case len(p.System) > 0:
		p.System[len(p.System)-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	case len(p.Tools) > 0:
		mark(p.Tools[len(p.Tools)-1].GetCacheControl())
	}
	last := func(m *anthropic.MessageParam) {
		var c []anthropic.ContentBlockParamUnion
		switch {
		case m.OfUser != nil:
			c = m.OfUser.Content
		case m.OfAssistant != nil:
			c = m.OfAssistant.Content
		}
		if n := len(c); n > 0 {
			mark(c[n-1].GetCacheControl())
		}
	}
	n := len(p.Messages)
	if n == 0 {
		return
	}
	last(&p.Messages[n-1])
	for i := n - 1; i > 0; i-- {
		if p.Messages[i].OfAssistant != nil {
			last(&p.Messages[i-1])
			break
		}
	}
}
