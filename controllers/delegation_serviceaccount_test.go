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
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestDelegationChildServiceAccount: a child run inherits its parent's
// ServiceAccount, and its builtin tools act as it only where the child's
// Agent allows it, as a root run's must (authority only narrows). The
// ServiceAccount here may scale the Deployment, so only the rule stops
// the child:
//   - the child's Agent does not list it: the delegation call fails with
//     ServiceAccountNotAllowed before any child is created, the parent's
//     model reads why, and nothing is scaled;
//   - it lists it when the child is created and not any more when the
//     child's scale is approved: the builtin call fails with the same
//     reason before it acts.
func TestDelegationChildServiceAccount(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "lender", Namespace: h.ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "scale-deployments", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "patch", "update"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lender", Namespace: h.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "scale-deployments"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "lender", Namespace: h.ns}}},
		deployment(h.ns, "web"),
	} {
		if err := h.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	h.startManager(controllers.Options{})
	scaler := func(policy exagentv1.PolicySpec, serviceAccounts ...string) exagentv1.AgentSpec {
		return exagentv1.AgentSpec{
			Model: fixture.Scripted(fixture.CallTurn("s1", "scale", map[string]any{"name": "web", "replicas": 3}), fixture.TextTurn("scaled")),
			Tools: []exagentv1.ToolSpec{{
				Name: "scale", Description: "scale a Deployment",
				Parameters: fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{
					"name": map[string]any{"type": "string"}, "replicas": map[string]any{"type": "integer"}}}),
				Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinScale, Kinds: []string{"Deployment.apps"}},
			}},
			Policy:              policy,
			ServiceAccountNames: serviceAccounts,
		}
	}
	parent := func(name, child string) {
		h.createAgent(name, exagentv1.AgentSpec{
			Model:  fixture.Scripted(fixture.CallTurn("c1", "hand", map[string]any{"input": "scale web to 3"}), fixture.TextTurn("parent done")),
			Tools:  []exagentv1.ToolSpec{fixture.AgentTool("hand", child)},
			Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		})
	}
	asLender := func(r *exagentv1.AgentRunSpec) {
		r.ServiceAccountName = "lender"
		r.RequestedBy = &exagentv1.Actor{Username: "carol"}
	}
	replicas := func() int32 {
		t.Helper()
		var d appsv1.Deployment
		if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}

	t.Run("not listed: the delegation call fails before any child", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		h.createAgent("stranger", scaler(exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}))
		parent("lends", "stranger")
		h.createRun("lend", "lends", asLender)
		done := h.waitPhase("lend", exagentv1.PhaseSucceeded)
		c := done.Status.Call("c1")
		if c == nil || c.State != exagentv1.CallFailed || c.Outcome == nil ||
			!strings.Contains(c.Outcome.Result, exagentv1.ReasonServiceAccountNotAllowed) || !strings.Contains(c.Outcome.Result, `"stranger"`) ||
			!strings.Contains(c.Outcome.Result, "lender") {
			t.Fatalf("call c1 = %+v, want Failed with ServiceAccountNotAllowed naming the Agent and the ServiceAccount", c)
		}
		if runs := h.treeRuns("lend"); len(runs) != 0 {
			t.Errorf("children %d, want none created", len(runs))
		}
		var read bool
		for _, m := range done.Status.History {
			read = read || m.Role == exagentv1.RoleTool && strings.Contains(m.Content, exagentv1.ReasonServiceAccountNotAllowed)
		}
		if !read {
			t.Errorf("the parent's transcript does not show the refusal to its model")
		}
		if n := replicas(); n != 1 {
			t.Errorf("replicas %d, want 1: nothing scaled as the parent's ServiceAccount", n)
		}
	})

	t.Run("listed, then removed before the child's builtin acts", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		h.createAgent("vouched", scaler(fixture.AskPolicy("scale"), "lender"))
		parent("lends-vouched", "vouched")
		h.createRun("vouch", "lends-vouched", asLender)
		child := h.childOf("vouch", "c1")
		paused := h.waitPhase(child, exagentv1.PhaseAwaitingApproval)
		if paused.Spec.ServiceAccountName != "lender" {
			t.Fatalf("child ServiceAccount %q, want the parent's", paused.Spec.ServiceAccountName)
		}
		var a exagentv1.Agent
		if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "vouched"}, &a); err != nil {
			t.Fatal(err)
		}
		a.Spec.ServiceAccountNames = nil
		if err := h.c.Update(ctx, &a); err != nil {
			t.Fatal(err)
		}
		h.approve(paused, "ok")
		done := h.waitPhase(child, exagentv1.PhaseSucceeded)
		c := done.Status.Call("s1")
		if c == nil || c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, exagentv1.ReasonServiceAccountNotAllowed) {
			t.Fatalf("child call s1 = %+v, want Failed with ServiceAccountNotAllowed", c)
		}
		if n := replicas(); n != 1 {
			t.Errorf("replicas %d, want 1: the child's builtin did not act", n)
		}
		h.waitPhase("vouch", exagentv1.PhaseSucceeded)
	})
}
