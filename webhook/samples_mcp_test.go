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

// TestMCPSampleIsValid: the documented mcp sample passes admission.
func TestMCPSampleIsValid(t *testing.T) {
	b, err := os.ReadFile("../config/samples/mcp/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(b), "\n---\n")
	var a exagentv1.Agent
	if err := yaml.UnmarshalStrict([]byte(doc), &a); err != nil {
		t.Fatalf("decoding the sample: %v", err)
	}
	if a.Kind != "Agent" || len(a.Spec.Tools) != 1 || a.Spec.Tools[0].MCP == nil {
		t.Fatalf("the sample's first document is not the mcp Agent: %+v", a)
	}
	if errs := webhook.ValidateAgent(&a, nil); len(errs) != 0 {
		t.Errorf("the sample is refused: %v", errs.ToAggregate())
	}
}
