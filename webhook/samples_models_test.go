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

	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

// TestModelSamplesAreValid: the samples docs/models.md shows decode
// strictly, pass admission, and show what each is there for.
func TestModelSamplesAreValid(t *testing.T) {
	samples := map[string]func(t *testing.T, m *exagentv1.ModelSpec){
		"../config/samples/models/azure-openai.yaml": func(t *testing.T, m *exagentv1.ModelSpec) {
			if m.APIKeySecretRef != nil || len(m.Headers) != 1 || m.Headers[0].Name != "api-key" {
				t.Errorf("the Azure sample should send its key as an api-key header: %+v", m)
			}
		},
		"../config/samples/models/ollama.yaml": func(t *testing.T, m *exagentv1.ModelSpec) {
			if m.APIKeySecretRef != nil || len(m.Headers) != 0 || m.BaseURL[:7] != "http://" {
				t.Errorf("the in-cluster sample should be plain http with no key: %+v", m)
			}
		},
		"../config/samples/models/anthropic.yaml": func(t *testing.T, m *exagentv1.ModelSpec) {
			if m.Provider != exagentv1.ModelProviderAnthropic || m.APIKeySecretRef == nil {
				t.Errorf("the Anthropic sample should be provider Anthropic with a key: %+v", m)
			}
		},
		"../config/samples/models/bedrock.yaml": func(t *testing.T, m *exagentv1.ModelSpec) {
			if m.Provider != exagentv1.ModelProviderBedrock || m.Region == "" || m.APIKeySecretRef != nil {
				t.Errorf("the Bedrock sample should name a region and no key: %+v", m)
			}
		},
		"../config/samples/models/gateway.yaml": func(t *testing.T, m *exagentv1.ModelSpec) {
			if m.CABundleSecretRef == nil || len(m.Headers) == 0 {
				t.Errorf("the gateway sample should show a tenant header and a CA bundle: %+v", m)
			}
		},
	}
	for path, check := range samples {
		t.Run(path, func(t *testing.T) {
			docs := sampleDocs(t, path)
			var a exagentv1.Agent
			if err := yaml.UnmarshalStrict([]byte(docs[0]), &a); err != nil {
				t.Fatalf("decoding the Agent: %v", err)
			}
			if errs := webhook.ValidateAgent(&a, nil); len(errs) != 0 {
				t.Errorf("the Agent is refused: %v", errs.ToAggregate())
			}
			check(t, &a.Spec.Model)
			for _, doc := range docs[1:] {
				var run exagentv1.AgentRun
				if err := yaml.UnmarshalStrict([]byte(doc), &run); err != nil {
					t.Fatalf("decoding the run: %v", err)
				}
				if run.Spec.AgentRef.Name != a.Name {
					t.Errorf("run %s is of Agent %q, not the sample's %q", run.Name, run.Spec.AgentRef.Name, a.Name)
				}
				if errs := webhook.ValidateAgentRun(&run, nil); len(errs) != 0 {
					t.Errorf("the run is refused: %v", errs.ToAggregate())
				}
			}
		})
	}
}
