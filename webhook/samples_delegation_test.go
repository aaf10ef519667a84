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

// TestDelegationSampleIsValid: the documented two-agent sample passes
// admission (its Agents and its run).
func TestDelegationSampleIsValid(t *testing.T) {
	if agents, runs := validateSample(t, "../config/samples/delegation/agents.yaml"); agents != 2 || runs != 1 {
		t.Errorf("the sample has %d Agents and %d runs, want 2 and 1", agents, runs)
	}
}

// TestWaitsSampleIsValid: the remediation sample of docs/waits.md (Scale,
// then WaitFor) passes admission.
func TestWaitsSampleIsValid(t *testing.T) {
	if agents, runs := validateSample(t, "../config/samples/waits/remediate.yaml"); agents != 1 || runs != 1 {
		t.Errorf("the sample has %d Agents and %d runs, want 1 and 1", agents, runs)
	}
}

// validateSample decodes every Agent and AgentRun of a multi-document
// sample strictly and validates each as admission does; it counts them.
func validateSample(t *testing.T, path string) (agents, runs int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Agent":
			var a exagentv1.Agent
			if err := yaml.UnmarshalStrict([]byte(doc), &a); err != nil {
				t.Fatalf("decoding an Agent: %v", err)
			}
			if errs := webhook.ValidateAgent(&a, nil); len(errs) != 0 {
				t.Errorf("Agent %s is refused: %v", a.Name, errs.ToAggregate())
			}
			agents++
		case "AgentRun":
			var r exagentv1.AgentRun
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				t.Fatalf("decoding the AgentRun: %v", err)
			}
			if errs := webhook.ValidateAgentRun(&r, nil); len(errs) != 0 {
				t.Errorf("AgentRun %s is refused: %v", r.Name, errs.ToAggregate())
			}
			runs++
		}
	}
	return agents, runs
}
