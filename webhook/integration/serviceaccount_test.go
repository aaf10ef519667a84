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
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestServiceAccountAdmission: a run's builtin tools act as its
// spec.serviceAccountName, so naming one is acting as it. dave may write
// Agents and runs (exagent-editor) but holds no right over ServiceAccount
// deployer: his run naming it is refused, saying what to grant, until he
// is granted "use" on it, or an Agent lists it — which only someone who
// may use it can write. The namespace's default ServiceAccount needs no
// grant; the manager's child runs keep their parent's.
func TestServiceAccountAdmission(t *testing.T) {
	ns := newNamespace(t)
	bind(t, ns, "dave", "ClusterRole", "exagent-editor")
	waitAllowed(t, "dave", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Group: "exagent.io", Resource: "agents"})
	dave := as(t, "dave")
	scripted := fixture.Scripted(fixture.TextTurn("done"))
	for _, a := range []*exagentv1.Agent{
		{ObjectMeta: metav1.ObjectMeta{Name: "ops", Namespace: ns}, Spec: exagentv1.AgentSpec{Model: scripted}},
		{ObjectMeta: metav1.ObjectMeta{Name: "vouched", Namespace: ns}, Spec: exagentv1.AgentSpec{Model: scripted, ServiceAccountNames: []string{"deployer"}}},
	} {
		if err := admin.Create(t.Context(), a); err != nil { // the admin may use every ServiceAccount
			t.Fatalf("creating Agent %s: %v", a.Name, err)
		}
	}
	run := func(name, agent, sa string) *exagentv1.AgentRun {
		return &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: "deploy", ServiceAccountName: sa}}
	}
	refusal := `spec.serviceAccountName: Forbidden: creator "dave" may not use ServiceAccount ` + ns + `/deployer, which the run's builtin tools would act as: ` +
		`grant the creator the verb "use" on serviceaccounts "deployer" in namespace ` + ns
	create := func(t *testing.T, c client.Client, r *exagentv1.AgentRun, wantDenied string) {
		t.Helper()
		err := c.Create(t.Context(), r)
		if wantDenied == "" {
			if err != nil {
				t.Fatalf("creating run %s: %v", r.Name, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), wantDenied) {
			t.Fatalf("creating run %s: %v, want refused with %q", r.Name, err, wantDenied)
		}
		assertAbsent(t, r)
	}

	t.Run("without a grant", func(t *testing.T) {
		create(t, dave, run("no-grant", "ops", "deployer"), refusal+`, or list it in Agent "ops"'s spec.serviceAccountNames`)
	})
	t.Run("of an Agent that does not exist", func(t *testing.T) {
		create(t, dave, run("no-agent", "not-yet", "deployer"), `or create Agent "not-yet" listing it in spec.serviceAccountNames (it was not found)`)
	})
	t.Run("the default ServiceAccount needs no grant", func(t *testing.T) {
		create(t, dave, run("unset", "ops", ""), "")
		create(t, dave, run("explicit-default", "ops", "default"), "")
	})
	t.Run("an Agent that lists it", func(t *testing.T) {
		create(t, dave, run("vouched", "vouched", "deployer"), "")
	})
	t.Run("an Agent writer who may not use it cannot list it", func(t *testing.T) {
		a := &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "self-vouched", Namespace: ns},
			Spec: exagentv1.AgentSpec{Model: scripted, ServiceAccountNames: []string{"builder", "deployer"}}}
		err := dave.Create(t.Context(), a)
		for _, want := range []string{
			`spec.serviceAccountNames[0]: Forbidden: "dave" may not use ServiceAccount ` + ns + `/builder, so may not let this Agent's runs act as it`,
			`spec.serviceAccountNames[1]: Forbidden`,
		} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("dave creating an Agent listing builder and deployer: %v, want %q", err, want)
			}
		}
		// Editing an Agent's other fields needs no right over the names it
		// already lists; adding one does.
		vouched := &exagentv1.Agent{}
		if err := dave.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "vouched"}, vouched); err != nil {
			t.Fatal(err)
		}
		vouched.Spec.Instructions = "be careful"
		if err := dave.Update(t.Context(), vouched); err != nil {
			t.Errorf("dave editing the instructions of an Agent listing deployer: %v", err)
		}
		vouched.Spec.ServiceAccountNames = append(vouched.Spec.ServiceAccountNames, "builder")
		if err := dave.Update(t.Context(), vouched); err == nil || !strings.Contains(err.Error(), `spec.serviceAccountNames[1]: Forbidden`) {
			t.Errorf("dave adding builder to an Agent's serviceAccountNames: %v, want Forbidden", err)
		}
	})
	t.Run(`with "use" on it`, func(t *testing.T) {
		createRole(t, ns, "use-deployer", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
			ResourceNames: []string{"deployer"}, Verbs: []string{"use"}})
		bind(t, ns, "dave", "Role", "use-deployer")
		waitAllowed(t, "dave", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "use", Resource: "serviceaccounts", Name: "deployer"})
		create(t, dave, run("use-granted", "ops", "deployer"), "")
		// Only that one: "use" on deployer is not "use" on builder.
		create(t, dave, run("other-sa", "ops", "builder"), `creator "dave" may not use ServiceAccount `+ns+`/builder`)
	})
	t.Run(`with "impersonate" on it`, func(t *testing.T) {
		createRole(t, ns, "impersonate-builder", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
			ResourceNames: []string{"builder"}, Verbs: []string{"impersonate"}})
		bind(t, ns, "dave", "Role", "impersonate-builder")
		waitAllowed(t, "dave", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "impersonate", Resource: "serviceaccounts", Name: "builder"})
		create(t, dave, run("impersonate-granted", "ops", "builder"), "")
	})
	// The manager creates a child run with its parent's ServiceAccount,
	// authorized when the root was created. In this suite the manager's
	// identity is the admin, who may use every ServiceAccount anyway; the
	// webhook unit test TestChildRunServiceAccountNotReviewed shows the
	// child path asks nothing.
	t.Run("the manager's child run", func(t *testing.T) {
		root := &exagentv1.AgentRun{}
		if err := admin.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "vouched"}, root); err != nil {
			t.Fatal(err)
		}
		child := run("vouched-child", "ops", "deployer")
		child.Labels = map[string]string{exagentv1.LabelParentRun: root.Name, exagentv1.LabelRootRun: root.Name}
		child.Spec.RequestedBy = root.Spec.RequestedBy.DeepCopy()
		child.Spec.Delegation = &exagentv1.Delegation{
			Parent: exagentv1.RunReference{Name: root.Name, UID: string(root.UID)},
			Root:   exagentv1.RunReference{Name: root.Name, UID: string(root.UID)},
			CallID: "c1", Ancestry: []string{string(root.UID) + "/c1"},
		}
		create(t, admin, child, "")
	})
}

// waitAllowed waits until the apiserver's authorizer grants user the
// access (RBAC reads bindings through an informer).
func waitAllowed(t *testing.T, user string, ra authorizationv1.ResourceAttributes) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: append([]string{"system:authenticated"}, users[user]...), ResourceAttributes: &ra}}
		if err := admin.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s's grant %+v: %v", user, ra, err)
	}
}
