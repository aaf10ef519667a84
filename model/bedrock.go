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
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/loop"
)

// BedrockConfig configures the Bedrock provider (the Converse API through
// the AWS SDK). There is no key: credentials come from the manager's
// default AWS chain (IRSA's web identity, EKS Pod Identity, the
// environment, the instance role).
type BedrockConfig struct {
	Region string
	// Model is the model id or inference profile (spec.model.name).
	Model string
	// BaseURL overrides the regional endpoint (a VPC endpoint; tests).
	BaseURL     string
	Temperature string
	MaxTokens   *int64
	HTTPClient  *http.Client
	Retry       RetryOptions
	CABundle    []byte
	// Credentials, when set, replace the default chain (tests).
	Credentials aws.CredentialsProvider
}

// Bedrock speaks Converse. Tool use ids are the journal's call ids, a
// batch's results go back as toolResult blocks of one user message;
// stopReason max_tokens ends the run ModelMaxTokens, guardrail_intervened
// and content_filtered ModelRefused; ThrottlingException is a rate limit.
type Bedrock struct {
	cfg    BedrockConfig
	client *bedrockruntime.Client
}

var _ Provider = (*Bedrock)(nil)

// awsConfigs caches the default chain's configuration per region: it is
// the manager's own identity (its credential endpoints are not a
// tenant's to name, so they are not dialled under the egress policy),
// loaded once and refreshed by the SDK's credential cache. The region is
// a tenant's string, so the cache is keyed only by real region names
// (AWSRegion) and holds at most maxAWSConfigs of them: past that a
// configuration is loaded for the one client and not kept, so no Agent
// can grow the manager's memory by naming regions.
var awsConfigs = struct {
	mu sync.Mutex
	m  map[string]*awsLoad
}{m: map[string]*awsLoad{}}

// maxAWSConfigs bounds awsConfigs: above the number of AWS regions there
// are, below what would matter to the manager's memory.
const maxAWSConfigs = 64

type awsLoad struct {
	once sync.Once
	cfg  aws.Config
	err  error
}

func defaultAWSConfig(region string) (aws.Config, error) {
	if !AWSRegion(region) {
		return aws.Config{}, &ConfigError{Field: "spec.model.region", Reason: exagentv1.ReasonInvalidConfiguration,
			Err: fmt.Errorf("%q is not an AWS region (e.g. us-east-1)", region)}
	}
	awsConfigs.mu.Lock()
	l, ok := awsConfigs.m[region]
	if !ok {
		l = &awsLoad{}
		if len(awsConfigs.m) < maxAWSConfigs {
			awsConfigs.m[region] = l
		}
	}
	awsConfigs.mu.Unlock()
	l.once.Do(func() { l.cfg, l.err = awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion(region)) })
	return l.cfg, l.err
}

// cachedAWSConfigs is how many regions awsConfigs holds (tests).
func cachedAWSConfigs() int {
	awsConfigs.mu.Lock()
	defer awsConfigs.mu.Unlock()
	return len(awsConfigs.m)
}

// NewBedrock builds the provider.
func NewBedrock(cfg BedrockConfig) (*Bedrock, error) {
	if cfg.Model == "" {
		return nil, errors.New("bedrock: model id is required")
	}
	if cfg.Region == "" {
		return nil, &ConfigError{Field: "spec.model.region", Reason: exagentv1.ReasonInvalidConfiguration,
			Err: errors.New("provider Bedrock needs the AWS region of the model")}
	}
	if cfg.BaseURL != "" {
		// Checked at admission too; here for an Agent admitted before the
		// rule, or past a bypassed webhook (bedrock_endpoint.go).
		if why := CheckBedrockEndpoint(cfg.BaseURL, cfg.Region); why != "" {
			return nil, &ConfigError{Field: "spec.model.baseURL", Reason: exagentv1.ReasonInvalidConfiguration,
				Err: fmt.Errorf("%q %s", cfg.BaseURL, why)}
		}
	}
	cfg.Retry = cfg.Retry.withDefaults()
	base, err := defaultAWSConfig(cfg.Region)
	var ce *ConfigError
	switch {
	case errors.As(err, &ce):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("bedrock: loading the AWS default configuration: %w", err)
	}
	hc, err := answerClient(cfg.HTTPClient, cfg.CABundle, cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("bedrock: %w", err)
	}
	client := bedrockruntime.NewFromConfig(base, func(o *bedrockruntime.Options) {
		o.Region = cfg.Region
		o.HTTPClient = hc
		if cfg.BaseURL != "" {
			o.BaseEndpoint = aws.String(cfg.BaseURL)
		}
		if cfg.Credentials != nil {
			o.Credentials = cfg.Credentials
		}
		// The SDK retries throttling, 5xx and broken connections; never a
		// request the egress policy refused or a certificate refused —
		// both would be met again.
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = cfg.Retry.MaxRetries + 1
			so.MaxBackoff = cfg.Retry.MaxRetryDelay
			so.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
				var denied *egress.DeniedError
				if errors.As(err, &denied) || certificateError(err) {
					return aws.FalseTernary
				}
				return aws.UnknownTernary
			})}, so.Retryables...)
		})
	})
	return &Bedrock{cfg: cfg, client: client}, nil
}

// Complete sends one Converse request.
func (b *Bedrock) Complete(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	in, err := b.input(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Retry.Timeout)
	defer cancel()
	out, err := b.client.Converse(ctx, in)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("bedrock converse (model %s, region %s): %w", b.cfg.Model, b.cfg.Region, classifyBedrock(err, len(b.cfg.CABundle) > 0))
	}
	var resp loop.ModelResponse
	if u := out.Usage; u != nil {
		in, read, write := i32(u.InputTokens), i32(u.CacheReadInputTokens), i32(u.CacheWriteInputTokens)
		resp.PromptTokens, resp.CompletionTokens = in+read+write, i32(u.OutputTokens)
		resp.CacheReadTokens, resp.CacheCreationTokens = read, write
	}
	switch out.StopReason {
	case types.StopReasonMaxTokens:
		return resp, &StopError{Reason: exagentv1.ReasonModelMaxTokens, Detail: "the model stopped at its maxTokens before finishing its answer; raise spec.model.maxCompletionTokens"}
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return resp, &StopError{Reason: exagentv1.ReasonModelRefused, Detail: fmt.Sprintf("the model's answer was withheld (stopReason %s)", out.StopReason)}
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return resp, fmt.Errorf("bedrock converse (model %s): the answer holds no message", b.cfg.Model)
	}
	for _, c := range msg.Value.Content {
		switch c := c.(type) {
		case *types.ContentBlockMemberText:
			resp.Content += c.Value
		case *types.ContentBlockMemberToolUse:
			args := "{}"
			if c.Value.Input != nil {
				// The document's own JSON: decoding it into any would turn
				// its numbers into strings (document.Number).
				raw, err := c.Value.Input.MarshalSmithyDocument()
				if err != nil || !json.Valid(raw) {
					return resp, fmt.Errorf("bedrock: tool use %q input is not JSON (%v)", aws.ToString(c.Value.ToolUseId), err)
				}
				args = string(raw)
			}
			resp.ToolCalls = append(resp.ToolCalls, exagentv1.MessageToolCall{ID: aws.ToString(c.Value.ToolUseId), Name: aws.ToString(c.Value.Name), Arguments: args})
		}
	}
	return resp, nil
}

func i32(p *int32) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// classifyBedrock maps the SDK's error to the classes the run knows:
// throttling is a rate limit (Waiting waits it out), a refused
// certificate is final; everything else is a failed request.
func classifyBedrock(err error, bundle bool) error {
	var throttled *types.ThrottlingException
	switch {
	case errors.As(err, &throttled):
		return &RateLimitedError{Status: http.StatusTooManyRequests, Err: err}
	case certificateError(err):
		return &UntrustedError{Bundle: bundle, Err: err}
	}
	return err
}

func (b *Bedrock) input(req loop.ModelRequest) (*bedrockruntime.ConverseInput, error) {
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(b.cfg.Model)}
	inf := &types.InferenceConfiguration{}
	if mt := capTokens(b.cfg.MaxTokens, req.MaxTokens); mt != nil {
		inf.MaxTokens = aws.Int32(int32(min(*mt, 1<<31-1)))
	}
	if b.cfg.Temperature != "" {
		t, err := strconv.ParseFloat(b.cfg.Temperature, 32)
		if err != nil {
			return nil, fmt.Errorf("bedrock: temperature %q: %w", b.cfg.Temperature, err)
		}
		inf.Temperature = aws.Float32(float32(t))
	}
	if inf.MaxTokens != nil || inf.Temperature != nil {
		in.InferenceConfig = inf
	}
	if len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		for _, t := range req.Tools {
			schema := map[string]any{"type": "object", "properties": map[string]any{}}
			if len(t.Parameters) > 0 {
				schema = map[string]any{}
				if err := json.Unmarshal(t.Parameters, &schema); err != nil {
					return nil, fmt.Errorf("bedrock: tool %q parameters: %w", t.Name, err)
				}
			}
			spec := types.ToolSpecification{Name: aws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}
			if t.Description != "" {
				spec.Description = aws.String(t.Description)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		in.ToolConfig = tc
	}
	leading := true
	for _, m := range req.Messages {
		if m.Role == exagentv1.RoleSystem && leading {
			in.System = append(in.System, &types.SystemContentBlockMemberText{Value: m.Content})
			continue
		}
		leading = false
		if err := appendConverse(&in.Messages, m); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// appendConverse adds m to msgs, one user message for the user side of a
// turn (the results of a batch together), as Converse requires.
func appendConverse(msgs *[]types.Message, m exagentv1.Message) error {
	role := types.ConversationRoleUser
	var blocks []types.ContentBlock
	switch m.Role {
	case exagentv1.RoleUser, exagentv1.RoleSystem:
		blocks = append(blocks, &types.ContentBlockMemberText{Value: nonEmpty(m.Content)})
	case exagentv1.RoleTool:
		blocks = append(blocks, &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
			ToolUseId: aws.String(m.ToolCallID),
			Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: nonEmpty(m.Content)}},
		}})
	case exagentv1.RoleAssistant:
		role = types.ConversationRoleAssistant
		if m.Content != "" || len(m.ToolCalls) == 0 {
			blocks = append(blocks, &types.ContentBlockMemberText{Value: nonEmpty(m.Content)})
		}
		for _, tc := range m.ToolCalls {
			args := map[string]any{}
			if tc.Arguments != "" {
				if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
					return fmt.Errorf("bedrock: tool call %q arguments: %w", tc.ID, err)
				}
			}
			blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(tc.ID), Name: aws.String(tc.Name), Input: document.NewLazyDocument(args)}})
		}
	default:
		return fmt.Errorf("bedrock: message role %q not supported", m.Role)
	}
	if n := len(*msgs); n > 0 && (*msgs)[n-1].Role == role {
		(*msgs)[n-1].Content = append((*msgs)[n-1].Content, blocks...)
		return nil
	}
	*msgs = append(*msgs, types.Message{Role: role, Content: blocks})
	return nil
}
