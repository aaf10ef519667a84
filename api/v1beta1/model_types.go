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

package v1beta1

// ModelRateLimit bounds the model requests of all runs of one Agent, as
// enforced by each manager process: with several replicas serving runs at
// once, each enforces it on its own runs (docs/models.md, "Rate limits").
// A run waiting for it holds no executor slot and no connection, keeps
// its claim, and says so in its Ready condition.
// +kubebuilder:validation:XValidation:rule="has(self.requestsPerMinute) || has(self.tokensPerMinute) || has(self.maxConcurrent)",message="set at least one of requestsPerMinute, tokensPerMinute, maxConcurrent"
type ModelRateLimit struct {
	// requestsPerMinute is a token bucket of that many requests, refilled
	// evenly over a minute.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	RequestsPerMinute *int32 `json:"requestsPerMinute,omitempty"`
	// tokensPerMinute is a bucket of that many tokens (prompt and
	// completion as the provider reports them), refilled evenly over a
	// minute; a request is sent while the bucket is not empty and charged
	// when its answer comes, so one large answer can overdraw it and the
	// next request waits until it is paid back.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	TokensPerMinute *int64 `json:"tokensPerMinute,omitempty"`
	// maxConcurrent is the most requests in flight at once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	MaxConcurrent *int32 `json:"maxConcurrent,omitempty"`
}

// PricePattern is a price as a non-negative decimal string with at most
// nine decimals (the ledger counts cost in billionths: Ledger.costNanos).
const PricePattern = `^[0-9]{1,12}(\.[0-9]{1,9})?$`

// ModelPricing is what the model costs, per million tokens, in one
// currency the platform team chooses (every price and every AgentBudget's
// costPerMonth read in it). Prices are decimal strings, e.g. "3" or
// "0.30". It is not part of the model's fingerprint: a price change never
// makes a paused run drift; each model response is charged at the prices
// the Agent holds when the response is recorded.
type ModelPricing struct {
	// inputPerMillion is the price of a million prompt tokens that were
	// neither read from nor written to the provider's prompt cache.
	// +optional
	// +kubebuilder:validation:MaxLength=22
	// +kubebuilder:validation:Pattern=`^[0-9]{1,12}(\.[0-9]{1,9})?$`
	InputPerMillion string `json:"inputPerMillion,omitempty"`
	// outputPerMillion is the price of a million completion tokens.
	// +optional
	// +kubebuilder:validation:MaxLength=22
	// +kubebuilder:validation:Pattern=`^[0-9]{1,12}(\.[0-9]{1,9})?$`
	OutputPerMillion string `json:"outputPerMillion,omitempty"`
	// cacheReadPerMillion is the price of a million prompt tokens read
	// from the prompt cache (unset: inputPerMillion).
	// +optional
	// +kubebuilder:validation:MaxLength=22
	// +kubebuilder:validation:Pattern=`^[0-9]{1,12}(\.[0-9]{1,9})?$`
	CacheReadPerMillion string `json:"cacheReadPerMillion,omitempty"`
	// cacheWritePerMillion is the price of a million prompt tokens
	// written to the prompt cache (unset: inputPerMillion).
	// +optional
	// +kubebuilder:validation:MaxLength=22
	// +kubebuilder:validation:Pattern=`^[0-9]{1,12}(\.[0-9]{1,9})?$`
	CacheWritePerMillion string `json:"cacheWritePerMillion,omitempty"`
}
