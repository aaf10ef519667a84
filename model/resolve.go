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
	"fmt"
	"net/http"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// SecretGetter reads one key of a Secret in the run's namespace.
type SecretGetter func(ctx context.Context, sel exagentv1.SecretKeySelector) (string, error)

// Options are the process-wide settings of providers built by For.
type Options struct {
	HTTPClient *http.Client
	// Timeout bounds one model request, its retries and their waits
	// included; zero means DefaultTimeout.
	Timeout time.Duration
	// AttemptTimeout, MaxRetries and MaxRetryDelay bound the retrying of
	// transient failures (see RetryOptions); zero means the default.
	AttemptTimeout time.Duration
	MaxRetries     int
	MaxRetryDelay  time.Duration
	// Limiter enforces the Agents' model.rateLimit in this process; the
	// controller asks it before a model job takes an executor slot.
	Limiter *Limiter
	// AgentLimits are the limits of the Agent a request is built for (not
	// process-wide: the controller sets them per request); Anthropic's
	// max_tokens defaults from them.
	AgentLimits *exagentv1.LimitsSpec
}

// For builds the provider an Agent's current model spec asks for. The API
// key, headers and CA bundle are read now, so a rotated Secret is used by
// the next request. A provider that sends requests is wrapped in Waiting:
// a rate limit is waited out within the run's budget (ratelimit.go).
func For(ctx context.Context, spec *exagentv1.ModelSpec, secret SecretGetter, opts Options) (Provider, error) {
	if spec.Provider == exagentv1.ModelProviderScripted {
		return Scripted{Script: spec.Script}, nil
	}
	ep, err := readEndpoint(ctx, spec, secret)
	if err != nil {
		return nil, err
	}
	retry := RetryOptions{Timeout: opts.Timeout, AttemptTimeout: opts.AttemptTimeout,
		MaxRetries: opts.MaxRetries, MaxRetryDelay: opts.MaxRetryDelay}
	var p Provider
	switch spec.Provider {
	case exagentv1.ModelProviderOpenAI:
		p, err = NewOpenAI(OpenAIConfig{
			BaseURL: spec.BaseURL, Model: spec.Name, APIKey: ep.apiKey, Temperature: spec.Temperature,
			MaxCompletionTokens: spec.MaxCompletionTokens, HTTPClient: opts.HTTPClient, Retry: retry,
			Headers: ep.headers, CABundle: ep.caBundle,
		})
	case exagentv1.ModelProviderAnthropic:
		p, err = NewAnthropic(AnthropicConfig{
			BaseURL: spec.BaseURL, Model: spec.Name, APIKey: ep.apiKey, Temperature: spec.Temperature,
			MaxTokens: AnthropicMaxTokens(spec, opts.AgentLimits), HTTPClient: opts.HTTPClient, Retry: retry,
			Headers: ep.headers, CABundle: ep.caBundle,
		})
	case exagentv1.ModelProviderBedrock:
		p, err = NewBedrock(BedrockConfig{
			Region: spec.Region, Model: spec.Name, BaseURL: spec.BaseURL, Temperature: spec.Temperature,
			MaxTokens: spec.MaxCompletionTokens, HTTPClient: opts.HTTPClient, Retry: retry, CABundle: ep.caBundle,
		})
	default:
		return nil, &ConfigError{Field: "spec.model.provider", Reason: exagentv1.ReasonInvalidConfiguration,
			Err: fmt.Errorf("provider %q is not one this manager speaks (OpenAI, Anthropic, Bedrock, Scripted)", spec.Provider)}
	}
	if err != nil {
		return nil, err
	}
	return Waiting{p}, nil
}

// endpoint is what an HTTP model's Secrets say.
type endpoint struct {
	apiKey   string
	headers  map[string]string
	caBundle []byte
}

func readEndpoint(ctx context.Context, spec *exagentv1.ModelSpec, secret SecretGetter) (endpoint, error) {
	var ep endpoint
	if spec.APIKeySecretRef != nil {
		key, err := secret(ctx, *spec.APIKeySecretRef)
		if err != nil {
			return ep, secretError("spec.model.apiKeySecretRef", *spec.APIKeySecretRef, err)
		}
		ep.apiKey = key
	}
	var err error
	if ep.headers, err = readHeaders(ctx, spec, secret); err != nil {
		return ep, err
	}
	if ep.caBundle, err = readCABundle(ctx, spec, secret); err != nil {
		return ep, err
	}
	return ep, nil
}
