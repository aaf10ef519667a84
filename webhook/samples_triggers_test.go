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
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/trigger"
	"github.com/exagent-io/exagent/webhook"
)

// TestCrashLoopTriggerSampleIsValid: the Kubernetes Events sample decodes
// strictly (no misspelt field), its Agent passes admission, its Role
// grants the ServiceAccount the trigger reads as list and watch on core
// events, and its input renders over an Event as the watcher builds it.
func TestCrashLoopTriggerSampleIsValid(t *testing.T) {
	docs := sampleDocs(t, "../config/samples/triggers/crashloop.yaml")
	if len(docs) != 5 {
		t.Fatalf("the sample has %d documents, want the ServiceAccount, Role, RoleBinding, Agent and AgentTrigger", len(docs))
	}
	var (
		sa   corev1.ServiceAccount
		role rbacv1.Role
		rb   rbacv1.RoleBinding
		a    exagentv1.Agent
		at   exagentv1.AgentTrigger
	)
	for i, into := range []any{&sa, &role, &rb, &a, &at} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), into); err != nil {
			t.Fatalf("decoding document %d: %v", i+1, err)
		}
	}
	if errs := webhook.ValidateAgent(&a, nil); len(errs) != 0 {
		t.Errorf("the Agent is refused: %v", errs.ToAggregate())
	}
	src := at.Spec.Source.KubernetesEvents
	if src == nil || src.ServiceAccountName != sa.Name || rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Name != sa.Name || at.Spec.RunTemplate.AgentRef.Name != a.Name {
		t.Fatalf("the sample's objects do not name each other: %+v", at.Spec)
	}
	if r := role.Rules; len(r) != 1 || strings.Join(r[0].APIGroups, ",") != "" || strings.Join(r[0].Resources, ",") != "events" ||
		strings.Join(r[0].Verbs, ",") != "list,watch" {
		t.Errorf("the Role grants %+v, want list and watch on core events only", r)
	}
	input, err := trigger.Compile(at.Spec.Input)
	if err != nil {
		t.Fatalf("spec.input: %v", err)
	}
	event := map[string]any{
		"name": "web-1.17a", "namespace": "demo", "reason": "BackOff", "type": "Warning", "count": int64(4),
		"message": "Back-off restarting failed container app", "source": "kubelet", "reportingController": "",
		"involvedObject": map[string]any{"kind": "Pod", "namespace": "demo", "name": "web-1", "uid": "u-1",
			"apiVersion": "v1", "fieldPath": "spec.containers{app}"},
		"firstTimestamp": "2026-03-01T10:00:00Z", "lastTimestamp": "2026-03-01T10:04:00Z",
	}
	got, err := input.Render(context.Background(), event, 32<<10)
	if err != nil {
		t.Fatalf("rendering spec.input: %v", err)
	}
	if want := "demo/web-1 (container spec.containers{app}): BackOff x4 since 2026-03-01T10:00:00Z: Back-off restarting failed container app"; got != want {
		t.Errorf("the input renders %q, want %q", got, want)
	}
}
