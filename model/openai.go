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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/loop"
)

// OpenAIConfig configures the OpenAI-compatible provider. Everything comes
// from the current Agent and its Secret, never from the run.
type OpenAIConfig struct {
	BaseURL             string
	Model               string
	APIKey              string
	Temperature         string
	MaxCompletionTokens *int64
	// HTTPClient is shared by all requests (connection reuse); nil means
	// the egress package's default-policy client. Whatever its settings, no
	// redirect is followed and an answer is read up to MaxAnswerBytes.
	HTTPClient *http.Client
	// Retry bounds the request, its retries and their waits.
	Retry RetryOptions
	// Headers are the resolved values of spec.model.headers, sent with
	// every request.
	Headers map[string]string
	// CABundle, when set, is the PEM of the only CAs the endpoint's
	// certificate may chain to (spec.model.caBundleSecretRef).
	CABundle []byte
}

// MaxAnswerBytes bounds one answer of a model endpoint, error answers
// included. A chat completion is text and tool calls: far below it.
const MaxAnswerBytes = 8 << 20

// OpenAI speaks chat completions through the official SDK. Tools are sent as
// functions with their JSON schema; tool-call IDs from the model are kept.
type OpenAI struct {
	cfg    OpenAIConfig
	client openai.Client
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI builds the provider.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: model name is required")
	}
	cfg.Retry = cfg.Retry.withDefaults()
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(cfg.Retry.MaxRetries),
		option.WithMaxRetryDelay(cfg.Retry.MaxRetryDelay),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	hc, err := answerClient(cfg.HTTPClient, cfg.CABundle, cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	opts = append(opts, option.WithHTTPClient(hc))
	return &OpenAI{cfg: cfg, client: openai.NewClient(opts...)}, nil
}

// answerClient is the client of one provider: a copy of the shared client
// (it keeps the shared transport's connections, or those of the CA
// bundle's transport) that follows no redirect, and whose every answer is
// read within MaxAnswerBytes, the SDK's own reads included.
func answerClient(shared *http.Client, caBundle []byte, retry RetryOptions) (*http.Client, error) {
	base, err := clientTrusting(shared, caBundle)
	if err != nil {
		return nil, err
	}
	hc := egress.WithoutRedirects(base)
	rt := hc.Transport
	if rt == nil {
		rt = egress.DefaultTransport()
	}
	hc.Transport = bounded.Transport(rt, MaxAnswerBytes, "the model's answer", nil)
	if retry.AttemptTimeout < retry.Timeout {
		// A try cut by the client's own timeout is a failed try the SDK
		// retries; a try cut by the context (option.WithRequestTimeout)
		// would end the request.
		hc.Timeout = retry.AttemptTimeout
	}
	return hc, nil
}

// Complete sends one chat-completion request.
func (o *OpenAI) Complete(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	params, err := o.params(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	// The whole retrying stays inside the model timeout: the SDK's waits
	// and tries all end with this context.
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Retry.Timeout)
	defer cancel()
	guard := &retryGuard{stop: cancel, bundle: len(o.cfg.CABundle) > 0}
	res, err := o.client.Chat.Completions.New(ctx, params, option.WithMiddleware(guard.middleware))
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("openai chat completion (model %s): %w", o.cfg.Model, guard.wrap(err, o.cfg.Retry))
	}
	if len(res.Choices) == 0 {
		return loop.ModelResponse{}, fmt.Errorf("openai chat completion (model %s): response has no choices", o.cfg.Model)
	}
	msg := res.Choices[0].Message
	out := loop.ModelResponse{
		Content:          msg.Content,
		PromptTokens:     res.Usage.PromptTokens,
		CompletionTokens: res.Usage.CompletionTokens,
	}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return loop.ModelResponse{}, fmt.Errorf("openai: unsupported tool call type %q", tc.Type)
		}
		args := tc.Function.Arguments
		if args == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, exagentv1.MessageToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	return out, nil
}

func (o *OpenAI) params(req loop.ModelRequest) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(o.cfg.Model)}
	if o.cfg.Temperature != "" {
		t, err := strconv.ParseFloat(o.cfg.Temperature, 64)
		if err != nil {
			return p, fmt.Errorf("openai: temperature %q: %w", o.cfg.Temperature, err)
		}
		p.Temperature = openai.Float(t)
	}
	if mt := capTokens(o.cfg.MaxCompletionTokens, req.MaxTokens); mt != nil {
		p.MaxCompletionTokens = openai.Int(*mt)
	}
	for _, m := range req.Messages {
		msg, err := toParam(m)
		if err != nil {
			return p, err
		}
		p.Messages = append(p.Messages, msg)
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 {
			schema = shared.FunctionParameters{}
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("openai: tool %q parameters: %w", t.Name, err)
			}
		}
		fn.Parameters = schema
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return p, nil
}

func toParam(m exagentv1.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case exagentv1.RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case exagentv1.RoleUser:
		return openai.UserMessage(m.Content), nil
	case exagentv1.RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case exagentv1.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: tc.Arguments,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("openai: message role %q not supported", m.Role)
}
