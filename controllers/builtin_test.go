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

package controllers_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestBuiltinScale scales a Deployment through the builtin tool as the
// run's ServiceAccount: allowed for one with RBAC on deployments/scale, and
// a failed outcome the model sees (not an operator error) for one without.
func TestBuiltinScale(t *testing.T) {
	tests := map[string]struct {
		serviceAccount string
		wantState      exagentv1.CallState
		wantResult     string
		wantReplicas   int32
	}{
		"allowed ServiceAccount scales": {
			serviceAccount: "scaler", wantState: exagentv1.CallSucceeded, wantResult: "scaled Deployment/web to 3 replicas", wantReplicas: 3,
		},
		"ServiceAccount without RBAC is refused": {
			serviceAccount: "nobody", wantState: exagentv1.CallFailed, wantResult: "forbidden", wantReplicas: 1,
		},
	}
	h := newHarness(t)
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scaler", Namespace: h.ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: h.ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "scale-deployments", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "patch", "update"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scaler", Namespace: h.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "scale-deployments"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scaler", Namespace: h.ns}}},
	} {
		if err := h.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	h.startManager(controllers.Options{})
	h.createAgent("ops", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("scale-web", "scale", map[string]any{"name": "web", "replicas": 3}),
			fixture.TextTurn("done"),
		),
		Tools: []exagentv1.ToolSpec{{
			Name: "scale", Description: "scale a Deployment",
			Parameters: fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}, "replicas": map[string]any{"type": "integer"}}}),
			Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinScale, Kinds: []string{"Deployment.apps"}},
		}},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sub := &harness{t: t, ns: h.ns, c: h.c}
			dep := deployment(h.ns, "web")
			if err := h.c.Create(ctx, dep); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.c.Delete(ctx, dep) })
			run := "scale-as-" + tc.serviceAccount
			sub.createRun(run, "ops", func(r *exagentv1.AgentRunSpec) { r.ServiceAccountName = tc.serviceAccount })
			done := sub.waitPhase(run, exagentv1.PhaseSucceeded)
			call := done.Status.Calls[0]
			if call.State != tc.wantState || call.Outcome == nil || !strings.Contains(call.Outcome.Result, tc.wantResult) {
				t.Errorf("call = %s %+v, want %s containing %q", call.State, call.Outcome, tc.wantState, tc.wantResult)
			}
			var got appsv1.Deployment
			if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "web"}, &got); err != nil {
				t.Fatal(err)
			}
			if *got.Spec.Replicas != tc.wantReplicas {
				t.Errorf("replicas = %d, want %d", *got.Spec.Replicas, tc.wantReplicas)
			}
		})
	}
}

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
			},
		},
	}
}
