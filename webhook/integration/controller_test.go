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

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/store"
)

// signedVerifier is the controller's re-check as the manager should wire
// it: authz.VerifyDecision with the manager's seal.
type signedVerifier struct {
	client client.Client
	signer *authz.Signer
}

func (v signedVerifier) Verify(ctx context.Context, d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun, agent *exagentv1.Agent) error {
	return authz.VerifyDecision(ctx, v.client, d, run, agent, authz.WithSigner(v.signer))
}

// startDecisionController runs the ApprovalDecision controller — only it:
// the runs here are paused by hand, with no model to resume them — watching
// ns alone, until the test ends.
func startDecisionController(t *testing.T, ns string) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &controllers.ApprovalDecisionReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Store:     store.NewStore(mgr.GetClient(), mgr.GetAPIReader()),
		Verifier:  signedVerifier{client: mgr.GetClient(), signer: signer},
		Name:      "approvaldecision-" + ns,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("decision controller: %v", err)
		}
	})
}

// waitForResult waits until the controller wrote the decision's result.
func waitForResult(t *testing.T, d *exagentv1.ApprovalDecision) *exagentv1.ApprovalDecision {
	t.Helper()
	got := &exagentv1.ApprovalDecision{}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
				return false, err
			}
			return got.Status.Phase != "", nil
		})
	if err != nil {
		t.Fatalf("waiting for the result of decision %s: %v", d.Name, err)
	}
	return got
}

// TestControllerAppliesAnAuthorizedDecision: an approver's decision,
// admitted and sealed, passes the controller's re-check and is applied.
func TestControllerAppliesAnAuthorizedDecision(t *testing.T) {
	s := newScenario(t)
	startDecisionController(t, s.ns)
	d := approve(s.ns, "alice-approves", runPayments)
	if err := as(t, "alice").Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	got := waitForResult(t, d)
	if got.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("decision is %s: %s", got.Status.Phase, got.Status.Message)
	}
	run := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	if st := run.Status.Approvals[0].State; st != exagentv1.ApprovalApproved {
		t.Errorf("approval is %s, want Approved", st)
	}
	if a := run.Status.Approvals[0].Actor; a == nil || a.Username != "alice" {
		t.Errorf("approval's actor = %+v, want alice", a)
	}
}

// TestControllerRejectsBypassedDecisions: the webhook configurations are
// deleted (a misconfigured cluster); decisions by a user who may create
// them but not approve are stored — and the controller rejects every one,
// forged actor included, and the run stays paused.
func TestControllerRejectsBypassedDecisions(t *testing.T) {
	s := newScenario(t)
	startDecisionController(t, s.ns)
	bob := as(t, "bob")
	restore := deleteWebhooks(t)
	eventually(t, "the apiserver stops calling the webhooks", func() bool {
		return bob.Create(t.Context(), approve(s.ns, "probe", runPayments), client.DryRunAll) == nil
	})

	cases := map[string]*exagentv1.Actor{
		"bob-no-actor":   nil,
		"bob-as-himself": {Username: "bob", Groups: []string{"payments-approvers", "system:authenticated"}},
		"bob-as-alice":   {Username: "alice", Groups: []string{"payments-approvers", "system:authenticated"}},
	}
	for name, actor := range cases {
		t.Run(name, func(t *testing.T) {
			d := approve(s.ns, name, runPayments)
			d.Spec.Actor = actor
			if err := bob.Create(t.Context(), d); err != nil {
				t.Fatalf("with the webhooks gone the apiserver should store it: %v", err)
			}
			got := waitForResult(t, d)
			if got.Status.Phase != exagentv1.DecisionRejected {
				t.Fatalf("decision is %s (%s), want Rejected", got.Status.Phase, got.Status.Message)
			}
			if !strings.Contains(got.Status.Message, "not admitted by the exagent admission webhook") {
				t.Errorf("rejection message %q does not say why", got.Status.Message)
			}
		})
	}
	run := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	if run.Status.Phase != exagentv1.PhaseAwaitingApproval || run.Status.Approvals[0].State != exagentv1.ApprovalPending {
		t.Errorf("run is %s with approval %s; want it still paused and pending", run.Status.Phase, run.Status.Approvals[0].State)
	}

	restore()
	eventually(t, "the webhooks are called again", func() bool {
		err := bob.Create(t.Context(), approve(s.ns, "probe", runPayments), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), `missing verb "approve"`)
	})
}
