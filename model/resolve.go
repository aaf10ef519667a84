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

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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
}

// For builds the provider an Agent's current model spec asks for. The API
// key is read now, so a rotated Secret is used by the next request.
func For(ctx context.Context, spec *exagentv1.ModelSpec, secret SecretGetter, opts Options) (Provider, error) {
	switch spec.Provider {
	case exagentv1.ModelProviderScripted:
		return Scripted{Script: spec.Script}, nil
	case exagentv1.ModelProviderOpenAI:
		cfg := OpenAIConfig{
			BaseURL:             spec.BaseURL,
			Model:               spec.Name,
			Temperature:         spec.Temperature,
			MaxCompletionTokens: spec.MaxCompletionTokens,
			HTTPClient:          opts.HTTPClient,
			Retry: RetryOptions{Timeout: opts.Timeout, AttemptTimeout: opts.AttemptTimeout,
				MaxRetries: opts.MaxRetries, MaxRetryDelay: opts.MaxRetryDelay},
		}
		if spec.APIKeySecretRef != nil {
			key, err := secret(ctx, *spec.APIKeySecretRef)
			if err != nil {
				return nil, fmt.Errorf("reading API key: %w", err)
			}
			cfg.APIKey = key
		}
		var err error
		if cfg.Headers, err = readHeaders(ctx, spec, secret); err != nil {
			return nil, err
		}
		if cfg.CABundle, err = readCABundle(ctx, spec, secret); err != nil {
			return nil, err
		}
		p, err := NewOpenAI(cfg)
		if err != nil {
			return nil, err
		}
		return Waiting{p}, nil // a 429 waits within the run's budget (ratelimit.go)
	}
	return nil, fmt.Errorf("model provider %q not supported", spec.Provider)
}
