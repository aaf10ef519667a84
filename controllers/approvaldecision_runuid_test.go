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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// TestDecisionRunUIDRecheck: a decision bound to a run that was deleted
// and re-created under the same name since (spec.runUID of the first
// run) is rejected by the controller itself — no webhook runs in this
// envtest, as when it is bypassed — with the words admission uses, and
// the new run's approval, under the same ID, stays pending. A decision
// bound to the new run's UID applies.
func TestDecisionRunUIDRecheck(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ctx := context.Background()
	h.createAgent("refunds", refundAgent(ts))
	h.createRun("again", "refunds")
	h.startManager(controllers.Options{})
	first := h.waitPhase("again", exagentv1.PhaseAwaitingApproval)

	if err := h.c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool {
		return apierrors.IsNotFound(h.c.Get(ctx, client.ObjectKeyFromObject(first), &exagentv1.AgentRun{}))
	}) {
		t.Fatal("the first run was not deleted")
	}
	h.createRun("again", "refunds")
	second := h.waitPhase("again", exagentv1.PhaseAwaitingApproval)
	if second.UID == first.UID {
		t.Fatal("the re-created run has the first one's UID")
	}
	a := pendingApproval(t, second)
	if old := pendingApproval(t, first); old.ID != a.ID {
		t.Fatalf("the re-created run's approval is %s, the first's %s: the test wants the same ID", a.ID, old.ID)
	}

	stale := h.decide(alice, h.decision("again", "stale").Approve(a).Reason("ok").
		Apply(func(d *exagentv1.ApprovalDecision) { d.Spec.RunUID = string(first.UID) }))
	got := h.waitDecision(stale.Name)
	want := exagentv1.RunRecreated(string(first.UID), string(second.UID))
	if got.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(got.Status.Message, want) {
		t.Fatalf("decision bound to the first run = %s (%q), want Rejected with %q", got.Status.Phase, got.Status.Message, want)
	}
	if run := h.get("again"); run.Status.Approval(a.ID).State != exagentv1.ApprovalPending || len(ts.journal()) != 0 {
		t.Fatalf("the stale decision changed the new run: approval %s, %d effects", run.Status.Approval(a.ID).State, len(ts.journal()))
	}

	current := h.decide(alice, h.decision("again", "current").Approve(a).Reason("ok").
		Apply(func(d *exagentv1.ApprovalDecision) { d.Spec.RunUID = string(second.UID) }))
	if d := h.waitDecision(current.Name); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("decision bound to the new run = %s (%s), want Applied", d.Status.Phase, d.Status.Message)
	}
	h.waitPhase("again", exagentv1.PhaseSucceeded)
}
