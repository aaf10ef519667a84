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
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestNewRunHasAnUnobservedGeneration: a run no controller has written yet
// is served with status.observedGeneration 0 (the CRD's default), so
// kstatus reads it as in progress instead of as a resource without status.
func TestNewRunHasAnUnobservedGeneration(t *testing.T) {
	ns := newNamespace(t)
	if err := env().Client.Create(context.Background(), sampleRun(ns, "fresh")); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRun"))
	if err := env().Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fresh"}, u); err != nil {
		t.Fatal(err)
	}
	og, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if err != nil || !found || og != 0 || u.GetGeneration() != 1 {
		t.Errorf("status.observedGeneration = %d (found %v, %v), generation %d; want 0 against 1", og, found, err, u.GetGeneration())
	}
}

// TestNewAgentHasAnUnobservedGeneration: an Agent not checked yet is
// served with status.observedGeneration 0, so GitOps tools wait for the
// check instead of calling it healthy.
func TestNewAgentHasAnUnobservedGeneration(t *testing.T) {
	ns := newNamespace(t)
	if err := env().Client.Create(context.Background(), sampleAgent(ns, "fresh")); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("Agent"))
	if err := env().Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fresh"}, u); err != nil {
		t.Fatal(err)
	}
	og, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if err != nil || !found || og != 0 || u.GetGeneration() != 1 {
		t.Errorf("status.observedGeneration = %d (found %v, %v), generation %d; want 0 against 1", og, found, err, u.GetGeneration())
	}
}
