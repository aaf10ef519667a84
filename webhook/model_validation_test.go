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

package webhook_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

// TestValidateModelEndpoint: the model's headers and CA bundle, each
// refusal naming its field.
func TestValidateModelEndpoint(t *testing.T) {
	sel := func(name string) exagentv1.SecretKeySelector {
		return exagentv1.SecretKeySelector{Name: name, Key: "v"}
	}
	openAI := func(mut func(m *exagentv1.ModelSpec)) *exagentv1.Agent {
		return agent(func(a *exagentv1.Agent) {
			a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: "https://gw.example/v1"}
			mut(&a.Spec.Model)
		})
	}
	cases := map[string]struct {
		agent *exagentv1.Agent
		want  []string
	}{
		"azure api-key header": {agent: openAI(func(m *exagentv1.ModelSpec) {
			m.Headers = []exagentv1.SecretHeader{{Name: "api-key", ValueFrom: sel("azure")}}
		})},
		"gateway tenant header and CA": {agent: openAI(func(m *exagentv1.ModelSpec) {
			m.Headers = []exagentv1.SecretHeader{{Name: "X-Tenant", ValueFrom: sel("t")}}
			m.CABundleSecretRef = new(sel("ca"))
		})},
		"anthropic": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderAnthropic, Name: "claude-sonnet-4-5"}
		})},
		"anthropic without a model name": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderAnthropic}
			}),
			want: []string{"FieldValueRequired spec.model.name"},
		},
		"bedrock": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "anthropic.claude-sonnet-4-5-v1:0", Region: "us-east-1"}
		})},
		"bedrock without a region, with a key and a header": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m",
					APIKeySecretRef: new(sel("k")), Headers: []exagentv1.SecretHeader{{Name: "X-Tenant", ValueFrom: sel("t")}}}
			}),
			want: []string{"FieldValueRequired spec.model.region", "FieldValueForbidden spec.model.apiKeySecretRef", "FieldValueForbidden spec.model.headers"},
		},
		"bedrock through a VPC endpoint": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
				BaseURL: "https://vpce-0abc-1234.bedrock-runtime.us-east-1.vpce.amazonaws.com"}
		})},
		"bedrock signing for a host that is not AWS's": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
					BaseURL: "https://bedrock.amazonaws.com.evil.example/"}
			}),
			want: []string{"FieldValueInvalid spec.model.baseURL"},
		},
		"bedrock signing for a tenant's S3 website bucket under amazonaws.com": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
					BaseURL: "https://evil.s3-website-us-east-1.amazonaws.com"}
			}),
			want: []string{"FieldValueInvalid spec.model.baseURL"},
		},
		"bedrock signing for a tenant's API Gateway under amazonaws.com": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
					BaseURL: "https://abc.execute-api.us-east-1.amazonaws.com"}
			}),
			want: []string{"FieldValueInvalid spec.model.baseURL"},
		},
		"bedrock signing for a name that only begins as Bedrock's": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
					BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com.evil.com"}
			}),
			want: []string{"FieldValueInvalid spec.model.baseURL"},
		},
		"bedrock endpoint of another region than the model's": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
					BaseURL: "https://bedrock-runtime.eu-west-1.amazonaws.com"}
			}),
			want: []string{"FieldValueInvalid spec.model.baseURL"},
		},
		"bedrock with a region that only looks like one": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "evil-region-1",
					BaseURL: "https://bedrock-runtime.evil-region-1.amazonaws.com"}
			}),
			want: []string{"FieldValueInvalid spec.model.region"},
		},
		"bedrock through its regional endpoint": {agent: agent(func(a *exagentv1.Agent) {
			a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
				BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com"}
		})},
		"bedrock over plain http": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "us-east-1",
					BaseURL: "http://bedrock-runtime.us-east-1.amazonaws.com"}
			}),
			want: []string{"FieldValueInvalid spec.model.baseURL"},
		},
		"bedrock with a bad region": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "m", Region: "Virginia"}
			}),
			want: []string{"FieldValueInvalid spec.model.region"},
		},
		"a region on an OpenAI model": {
			agent: openAI(func(m *exagentv1.ModelSpec) { m.Region = "us-east-1" }),
			want:  []string{"FieldValueForbidden spec.model.region"},
		},
		"a bad header name": {
			agent: openAI(func(m *exagentv1.ModelSpec) {
				m.Headers = []exagentv1.SecretHeader{{Name: "X Tenant", ValueFrom: sel("t")}}
			}),
			want: []string{"FieldValueInvalid spec.model.headers[0].name"},
		},
		"the same header twice, in other cases": {
			agent: openAI(func(m *exagentv1.ModelSpec) {
				m.Headers = []exagentv1.SecretHeader{{Name: "x-tenant", ValueFrom: sel("t")}, {Name: "X-Tenant", ValueFrom: sel("u")}}
			}),
			want: []string{"FieldValueDuplicate spec.model.headers[1].name"},
		},
		"a header the provider sets": {
			agent: openAI(func(m *exagentv1.ModelSpec) {
				m.Headers = []exagentv1.SecretHeader{{Name: "content-length", ValueFrom: sel("t")}}
			}),
			want: []string{"FieldValueInvalid spec.model.headers[0].name"},
		},
		"Authorization beside apiKeySecretRef": {
			agent: openAI(func(m *exagentv1.ModelSpec) {
				m.APIKeySecretRef = new(sel("k"))
				m.Headers = []exagentv1.SecretHeader{{Name: "authorization", ValueFrom: sel("t")}}
			}),
			want: []string{"FieldValueInvalid spec.model.headers[0].name"},
		},
		"Authorization alone (a gateway's own scheme)": {agent: openAI(func(m *exagentv1.ModelSpec) {
			m.Headers = []exagentv1.SecretHeader{{Name: "Authorization", ValueFrom: sel("t")}}
		})},
		"a header's Secret without a key": {
			agent: openAI(func(m *exagentv1.ModelSpec) {
				m.Headers = []exagentv1.SecretHeader{{Name: "X-Tenant", ValueFrom: exagentv1.SecretKeySelector{Name: "t"}}}
			}),
			want: []string{"FieldValueRequired spec.model.headers[0].valueFrom.key"},
		},
		"a CA bundle over plain http": {
			agent: openAI(func(m *exagentv1.ModelSpec) {
				m.BaseURL = "http://ollama:11434/v1"
				m.CABundleSecretRef = new(sel("ca"))
			}),
			want: []string{"FieldValueInvalid spec.model.caBundleSecretRef"},
		},
		"a rate limit": {agent: openAI(func(m *exagentv1.ModelSpec) {
			m.RateLimit = &exagentv1.ModelRateLimit{RequestsPerMinute: new(int32(60)), TokensPerMinute: new(int64(100000)), MaxConcurrent: new(int32(4))}
		})},
		"an empty rate limit": {
			agent: openAI(func(m *exagentv1.ModelSpec) { m.RateLimit = &exagentv1.ModelRateLimit{} }),
			want:  []string{"FieldValueRequired spec.model.rateLimit"},
		},
		"a rate limit of no requests": {
			agent: openAI(func(m *exagentv1.ModelSpec) { m.RateLimit = &exagentv1.ModelRateLimit{MaxConcurrent: new(int32(0))} }),
			want:  []string{"FieldValueInvalid spec.model.rateLimit.maxConcurrent"},
		},
		"headers on a Scripted model": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model.Headers = []exagentv1.SecretHeader{{Name: "X-Tenant", ValueFrom: sel("t")}}
				a.Spec.Model.CABundleSecretRef = new(sel("ca"))
			}),
			want: []string{"FieldValueForbidden spec.model.headers", "FieldValueForbidden spec.model.caBundleSecretRef"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errKeys(webhook.ValidateAgent(tc.agent, nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
