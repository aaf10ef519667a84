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

package integration_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// TestBudgetSample: config/samples/budgets/team-budget.yaml is created by a
// platform admin (victor here) bound to exagent-budget-admin, and refused to an Agent
// author bound to exagent-editor (budgets are not theirs to raise); a
// budget without a limit, or without a spec, is refused naming what to set.
func TestBudgetSample(t *testing.T) {
	ns := newNamespace(t)
	bind(t, ns, "dave", "ClusterRole", "exagent-editor")
	bind(t, ns, "victor", "ClusterRole", "exagent-budget-admin")
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", "budgets", "team-budget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sample := func() *exagentv1.AgentBudget {
		b := &exagentv1.AgentBudget{}
		if err := yaml.UnmarshalStrict(data, b); err != nil {
			t.Fatal(err)
		}
		b.Namespace = ns
		return b
	}
	mustRefuse(t, as(t, "dave").Create(t.Context(), sample()), "forbidden", "agentbudgets")
	if err := as(t, "victor").Create(t.Context(), sample()); err != nil {
		t.Fatalf("the platform admin's budget: %v", err)
	}
	empty := sample()
	empty.Name, empty.Spec = "empty", exagentv1.AgentBudgetSpec{}
	mustRefuse(t, as(t, "victor").Create(t.Context(), empty), "tokensPerDay")
}
