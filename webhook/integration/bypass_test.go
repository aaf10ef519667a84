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
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// TestWebhookUnreachable: with failurePolicy Fail, a manager that cannot be
// reached means no decision is admitted and the run is untouched.
func TestWebhookUnreachable(t *testing.T) {
	s := newScenario(t)
	before := get(t, s.ns, runPayments, &exagentv1.AgentRun{})

	dead := unusedAddress(t)
	restore := rewriteWebhooks(t, func(cc *admissionregistrationv1.WebhookClientConfig) {
		u := "https://" + dead + "/unreachable"
		cc.URL = &u
	})
	alice := as(t, "alice")
	probe := func() error {
		return alice.Create(t.Context(), approve(s.ns, "probe", runPayments), client.DryRunAll)
	}
	// The apiserver picks configuration changes up asynchronously.
	eventually(t, "the apiserver calls the unreachable webhook", func() bool {
		err := probe()
		return err != nil && strings.Contains(err.Error(), "failed calling webhook")
	})

	d := approve(s.ns, "alice-while-down", runPayments)
	err := alice.Create(t.Context(), d)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("got %v, want the decision refused because the webhook cannot be called", err)
	}
	assertAbsent(t, d)
	after := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	if diff := cmp.Diff(before.Status, after.Status); diff != "" || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the run changed while the webhook was down (-before +after):\n%s", diff)
	}

	// Metadata-only updates are not sent to the validating webhooks (their
	// matchCondition), so they go through; a spec change cannot.
	agent := get(t, s.ns, "payments", &exagentv1.Agent{})
	agent.Labels = map[string]string{"team": "payments"}
	if err := admin.Update(t.Context(), agent); err != nil {
		t.Errorf("a label update needs no webhook, got: %v", err)
	}
	agent.Spec.Instructions = "changed while the webhook is down"
	if err := admin.Update(t.Context(), agent); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("a spec update while the webhook is down: got %v, want it refused", err)
	}

	restore()
	eventually(t, "decisions are admitted again", func() bool { return probe() == nil })
}

// TestWebhookBypassed: with the webhook configurations deleted (a
// misconfigured cluster), nothing stops a user with create on
// approvaldecisions from storing a decision with any spec.actor — the
// controller's re-check (authz.VerifyDecision, run before it applies
// anything) must reject it. RBAC alone catches an honest actor; only the
// seal catches a forged one, which is why the manager wires it.
func TestWebhookBypassed(t *testing.T) {
	s := newScenario(t)
	// Admitted normally before the bypass: it keeps verifying afterwards.
	admitted := approve(s.ns, "alice-before", runPayments)
	if err := as(t, "alice").Create(t.Context(), admitted); err != nil {
		t.Fatal(err)
	}
	admittedSeal := get(t, s.ns, admitted.Name, &exagentv1.ApprovalDecision{}).Annotations[authz.SignatureAnnotation]

	bob := as(t, "bob") // may create decisions; lacks "approve"
	probe := func() error {
		return bob.Create(t.Context(), approve(s.ns, "probe", runPayments), client.DryRunAll)
	}
	restore := deleteWebhooks(t)
	eventually(t, "the apiserver stops calling the webhooks", func() bool { return probe() == nil })

	alice := &exagentv1.Actor{Username: "alice", Groups: []string{"payments-approvers", "system:authenticated"}}
	cases := map[string]struct {
		actor *exagentv1.Actor
		sig   string
		// wantRBAC: the re-check without a seal; wantSealed: with it.
		wantRBAC, wantSealed authz.Check
	}{
		"no actor: nothing stamped one": {wantRBAC: authz.CheckActor, wantSealed: authz.CheckActor},
		"bob names himself": {
			actor:    &exagentv1.Actor{Username: "bob", Groups: []string{"payments-approvers"}},
			wantRBAC: authz.CheckRBAC, wantSealed: authz.CheckActor,
		},
		// The reason for the seal: RBAC is asked about alice, who may.
		"bob names alice": {actor: alice, wantRBAC: "", wantSealed: authz.CheckActor},
		"bob names alice and copies her seal": {
			actor: alice, sig: admittedSeal, wantRBAC: "", wantSealed: authz.CheckActor,
		},
	}
	paid := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	agent := get(t, s.ns, "payments", &exagentv1.Agent{})
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			d := approve(s.ns, fmt.Sprintf("bob-%d", i), runPayments)
			d.Spec.Actor = tc.actor
			if tc.sig != "" {
				d.Annotations = map[string]string{authz.SignatureAnnotation: tc.sig}
			}
			if err := bob.Create(t.Context(), d); err != nil {
				t.Fatalf("with the webhooks gone the apiserver should store it: %v", err)
			}
			stored := get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{})
			err := authz.VerifyDecision(t.Context(), admin, stored, paid, agent)
			if diff := cmp.Diff(tc.wantRBAC, authz.DeniedCheck(err)); diff != "" {
				t.Errorf("re-check without the seal (-want +got):\n%s\nerror: %v", diff, err)
			}
			err = authz.VerifyDecision(t.Context(), admin, stored, paid, agent, authz.WithSigner(signer))
			if diff := cmp.Diff(tc.wantSealed, authz.DeniedCheck(err)); diff != "" {
				t.Errorf("re-check with the seal (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
	t.Run("a decision admitted before the bypass", func(t *testing.T) {
		stored := get(t, s.ns, admitted.Name, &exagentv1.ApprovalDecision{})
		if err := authz.VerifyDecision(t.Context(), admin, stored, paid, agent, authz.WithSigner(signer)); err != nil {
			t.Errorf("re-check: %v", err)
		}
	})

	restore()
	eventually(t, "the webhooks are called again", func() bool {
		err := probe()
		return err != nil && strings.Contains(err.Error(), `missing verb "approve"`)
	})
}

// rewriteWebhooks points every exagent webhook elsewhere and returns a
// function that puts the original client configurations back.
func rewriteWebhooks(t *testing.T, mut func(*admissionregistrationv1.WebhookClientConfig)) func() {
	t.Helper()
	ctx := t.Context()
	mutating, validating := webhookConfigs(t)
	origM, origV := mutating.DeepCopy(), validating.DeepCopy()
	for i := range mutating.Webhooks {
		mut(&mutating.Webhooks[i].ClientConfig)
	}
	for i := range validating.Webhooks {
		mut(&validating.Webhooks[i].ClientConfig)
	}
	if err := admin.Update(ctx, mutating); err != nil {
		t.Fatal(err)
	}
	if err := admin.Update(ctx, validating); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		// A fresh context: this also runs from Cleanup, after t.Context ends.
		ctx := context.Background()
		m, v := webhookConfigs(t)
		m.Webhooks, v.Webhooks = origM.Webhooks, origV.Webhooks
		if err := admin.Update(ctx, m); err != nil {
			t.Errorf("restoring the mutating webhooks: %v", err)
		}
		if err := admin.Update(ctx, v); err != nil {
			t.Errorf("restoring the validating webhooks: %v", err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// deleteWebhooks removes the exagent webhook configurations and returns a
// function that re-creates them.
func deleteWebhooks(t *testing.T) func() {
	t.Helper()
	mutating, validating := webhookConfigs(t)
	for _, obj := range []client.Object{mutating, validating} {
		if err := admin.Delete(t.Context(), obj.DeepCopyObject().(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		for _, obj := range []client.Object{mutating, validating} {
			obj.SetResourceVersion("")
			obj.SetUID("")
			if err := admin.Create(context.Background(), obj); err != nil {
				t.Errorf("re-creating %s: %v", obj.GetName(), err)
			}
		}
	}
	t.Cleanup(restore)
	return restore
}

func webhookConfigs(t *testing.T) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	wio := env.WebhookInstallOptions
	if len(wio.MutatingWebhooks) != 1 || len(wio.ValidatingWebhooks) != 1 {
		t.Fatalf("want one mutating and one validating configuration, have %d and %d", len(wio.MutatingWebhooks), len(wio.ValidatingWebhooks))
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: wio.MutatingWebhooks[0].Name}, m); err != nil {
		t.Fatal(err)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: wio.ValidatingWebhooks[0].Name}, v); err != nil {
		t.Fatal(err)
	}
	return m, v
}

// unusedAddress returns a loopback address nothing listens on.
func unusedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// eventually polls cond until it holds; for state the apiserver reaches
// asynchronously (webhook configuration changes), never as a sleep.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}
