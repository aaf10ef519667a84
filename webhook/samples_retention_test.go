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

// TestRetentionSampleIsValid: the documented retention sample (an Agent
// with every retention field, a run with its own TTL) passes admission.
func TestRetentionSampleIsValid(t *testing.T) {
	b, err := os.ReadFile("../config/samples/retention/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("the sample has %d documents, want the Agent and the run", len(docs))
	}
	var a exagentv1.Agent
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &a); err != nil {
		t.Fatalf("decoding the Agent: %v", err)
	}
	r := a.Spec.Retention
	if r.TTLSecondsAfterFinished == nil || r.KeepLast == nil || r.Archive == nil || r.Archive.SigningSecretRef == nil {
		t.Fatalf("the sample's retention does not show every field: %+v", r)
	}
	if errs := webhook.ValidateAgent(&a, nil); len(errs) != 0 {
		t.Errorf("the Agent is refused: %v", errs.ToAggregate())
	}
	var run exagentv1.AgentRun
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &run); err != nil {
		t.Fatalf("decoding the run: %v", err)
	}
	if run.Spec.TTLSecondsAfterFinished == nil || run.Spec.AgentRef.Name != a.Name {
		t.Fatalf("the sample's run does not set its own TTL on the Agent: %+v", run.Spec)
	}
	if errs := webhook.ValidateAgentRun(&run, nil); len(errs) != 0 {
		t.Errorf("the run is refused: %v", errs.ToAggregate())
	}
}
