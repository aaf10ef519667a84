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
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

// sampleDocs reads a sample's YAML documents.
func sampleDocs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n---\n")
}

// TestInstallGuideSamplesAreValid: the samples docs/install.md and
// docs/gitops.md walk through — an http tool with a Secret header, an Agent
// with notify sinks, a real model on an OpenAI-compatible server, a
// decision committed to Git — decode strictly (no misspelt field) and pass
// admission's validation.
func TestInstallGuideSamplesAreValid(t *testing.T) {
	agents := map[string]func(t *testing.T, a *exagentv1.Agent){
		"../config/samples/http/agent.yaml": func(t *testing.T, a *exagentv1.Agent) {
			h := a.Spec.Tools[0].HTTP
			if h == nil || len(h.Headers) == 0 || h.Headers[0].ValueFrom.Name == "" {
				t.Errorf("the http sample has no header from a Secret: %+v", h)
			}
		},
		"../config/samples/notify/agent.yaml": func(t *testing.T, a *exagentv1.Agent) {
			formats := map[exagentv1.NotifyFormat]bool{}
			for _, s := range a.Spec.Notify {
				formats[s.FormatOrDefault()] = true
			}
			if !formats[exagentv1.NotifySlack] || !formats[exagentv1.NotifyCloudEvents] {
				t.Errorf("the notify sample should show both formats: %+v", a.Spec.Notify)
			}
		},
		"../config/samples/openai-local/agent.yaml": func(t *testing.T, a *exagentv1.Agent) {
			if a.Spec.Model.Provider != exagentv1.ModelProviderOpenAI || a.Spec.Model.BaseURL == "" {
				t.Errorf("the local-model sample is not an OpenAI-compatible endpoint: %+v", a.Spec.Model)
			}
		},
	}
	for path, check := range agents {
		t.Run(path, func(t *testing.T) {
			docs := sampleDocs(t, path)
			var a exagentv1.Agent
			if err := yaml.UnmarshalStrict([]byte(docs[0]), &a); err != nil {
				t.Fatalf("decoding the Agent: %v", err)
			}
			if errs := webhook.ValidateAgent(&a, nil); len(errs) != 0 {
				t.Errorf("the Agent is refused: %v", errs.ToAggregate())
			}
			check(t, &a)
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
	t.Run("gitops decision", func(t *testing.T) {
		var d exagentv1.ApprovalDecision
		if err := yaml.UnmarshalStrict([]byte(sampleDocs(t, "../config/samples/gitops/decision.yaml")[0]), &d); err != nil {
			t.Fatal(err)
		}
		if errs := webhook.ValidateApprovalDecision(&d, nil); len(errs) != 0 {
			t.Errorf("the decision is refused: %v", errs.ToAggregate())
		}
		if d.Name == "" || d.GenerateName != "" || d.Spec.PayloadHash == "" || d.Spec.Revision == 0 || d.Spec.Actor != nil {
			t.Errorf("a committed decision needs a fixed name, the payload hash and revision it binds, and no actor: %+v %+v", d.ObjectMeta, d.Spec)
		}
	})
}
