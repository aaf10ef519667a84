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
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// TestSpecChangedStartsNoIO: a run's spec is immutable — the admission
// policy refuses a change — and a run whose spec changed anyway (a cluster
// without the policy: here its binding is deleted) starts no IO: Ready
// False SpecChanged, and an approval given after the change runs nothing.
func TestSpecChangedStartsNoIO(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("payments", refundAgent(ts))
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)

	ctx := context.Background()
	changeInput := func(input string) error {
		run := &exagentv1.AgentRun{}
		if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "r1"}, run); err != nil {
			return err
		}
		run.Spec.Input = input
		return h.c.Update(ctx, run)
	}
	if err := changeInput("refund 5000 instead"); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable: create a new AgentRun instead") {
		t.Fatalf("spec update: got %v, want Invalid: spec is immutable (the admission policy)", err)
	}

	// A cluster without the policy: its binding deleted, then put back.
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	binding.Name = "exagent-agentrun-spec"
	if err := h.c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := testenv.InstallPolicies(context.Background(), env().Client, testenv.RepoRoot()); err != nil {
			t.Errorf("reinstalling the admission policy: %v", err)
		}
	})
	// The apiserver drops the binding from its informer soon: until then
	// the update is still refused (Invalid); anything else is a failure.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = changeInput("refund 5000 instead")
		if last != nil && !apierrors.IsInvalid(last) {
			return false, last
		}
		return last == nil, nil
	}); err != nil {
		t.Fatalf("spec update without the policy's binding: %v (last: %v)", err, last)
	}

	changed := h.waitRun("r1", "Ready=False SpecChanged", readyReason(exagentv1.ReasonSpecChanged))
	if changed.Generation != 2 || changed.Status.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("generation %d phase %s, want 2 and still AwaitingApproval", changed.Generation, changed.Status.Phase)
	}
	h.approve(paused, "approve-1")
	h.waitDecision("r1-approve-1")
	h.waitRun("r1", "reconciled after the decision, still SpecChanged", func(r *exagentv1.AgentRun) bool {
		return readyReason(exagentv1.ReasonSpecChanged)(r) && r.Status.Phase != exagentv1.PhaseAwaitingApproval
	})
	if got := ts.journal(); len(got) != 0 {
		t.Fatalf("a run whose spec changed called its tool: %+v", got)
	}
	if run := h.get("r1"); run.Status.Claim != nil {
		t.Errorf("a run whose spec changed was claimed: %+v", run.Status.Claim)
	}
}
