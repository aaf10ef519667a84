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

package v1beta1_test

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestSelectableFields: the apiserver filters AgentRuns by status.phase
// and spec.agentRef.name (what `kubectl approve list` and completion ask
// for), a run without a phase selects as the empty string, and the labels
// are the constants the plugin uses.
func TestSelectableFields(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, r := range []struct{ name, agent, phase string }{
		{"waiting-ops", "ops", "AwaitingApproval"},
		{"waiting-pay", "payments", "AwaitingApproval"},
		{"done-ops", "ops", "Succeeded"},
		{"new-ops", "ops", ""},
	} {
		run := sampleRun(ns, r.name)
		run.Spec.AgentRef.Name = r.agent
		if err := env().Client.Create(ctx, run); err != nil {
			t.Fatal(err)
		}
		if r.phase != "" {
			run.Status.Phase = exagentv1.RunPhase(r.phase)
			if err := env().Client.Status().Update(ctx, run); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := map[string]struct {
		selector string
		want     []string
	}{
		"awaiting approval":   {selector: exagentv1.FieldStatusPhase + "=AwaitingApproval", want: []string{"waiting-ops", "waiting-pay"}},
		"one agent":           {selector: exagentv1.FieldAgentName + "=ops", want: []string{"done-ops", "new-ops", "waiting-ops"}},
		"both":                {selector: exagentv1.FieldStatusPhase + "=AwaitingApproval," + exagentv1.FieldAgentName + "=payments", want: []string{"waiting-pay"}},
		"not ended":           {selector: exagentv1.FieldStatusPhase + "!=Succeeded", want: []string{"new-ops", "waiting-ops", "waiting-pay"}},
		"no phase is empty":   {selector: exagentv1.FieldStatusPhase + "=", want: []string{"new-ops"}},
		"a phase nobody has":  {selector: exagentv1.FieldStatusPhase + "=Uncertain", want: nil},
		"metadata still work": {selector: "metadata.name=done-ops", want: []string{"done-ops"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := fields.ParseSelector(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			var list exagentv1.AgentRunList
			if err := env().Client.List(ctx, &list, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: sel}); err != nil {
				t.Fatalf("list --field-selector %s: %v", tc.selector, err)
			}
			var got []string
			for _, r := range list.Items {
				got = append(got, r.Name)
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("--field-selector %s (-want +got):\n%s", tc.selector, diff)
			}
		})
	}
}
