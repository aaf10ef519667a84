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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// cancelOf is a Cancel of the whole run as the plugin sends it, bound to
// the revision the decider saw.
func cancelOf(ns, name string, run *exagentv1.AgentRun) *exagentv1.ApprovalDecision {
	return &exagentv1.ApprovalDecision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: exagentv1.ApprovalDecisionSpec{
			RunRef: exagentv1.LocalObjectReference{Name: run.Name}, Decision: exagentv1.DecisionCancel,
			Revision: run.Status.Revision, Reason: "stop",
		},
	}
}

// TestCancelAdmission: a Cancel with no approval named is admitted in every
// phase a run can be cancelled in — not started, Queued, Running,
// AwaitingApproval, Approved, Uncertain — and the controller applies it;
// a run that has ended refuses it at admission.
func TestCancelAdmission(t *testing.T) {
	s := newScenario(t)
	startDecisionController(t, s.ns)
	dave, alice := as(t, "dave"), as(t, "alice")

	live := map[string]exagentv1.RunPhase{
		"c-new": "", "c-queued": exagentv1.PhaseQueued, "c-running": exagentv1.PhaseRunning,
		"c-awaiting": exagentv1.PhaseAwaitingApproval, "c-approved": exagentv1.PhaseApproved, "c-uncertain": exagentv1.PhaseUncertain,
	}
	for name, phase := range live {
		t.Run(orNotStarted(phase), func(t *testing.T) {
			var run *exagentv1.AgentRun
			switch phase {
			case "":
				run = &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
					Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "pay"}}
				if err := dave.Create(t.Context(), run); err != nil {
					t.Fatal(err)
				}
			case exagentv1.PhaseUncertain:
				run = createPausedRun(t, dave, s.ns, name, "payments", true)
			default:
				run = setPhase(t, createPausedRun(t, dave, s.ns, name, "payments", false), phase)
			}
			d := cancelOf(s.ns, name+"-cancel", run)
			if err := alice.Create(t.Context(), d); err != nil {
				t.Fatalf("cancel of a %s run refused: %v", orNotStarted(phase), err)
			}
			if got := waitForResult(t, d); got.Status.Phase != exagentv1.DecisionApplied {
				t.Fatalf("cancel = %s: %s", got.Status.Phase, got.Status.Message)
			}
			after := get(t, s.ns, name, &exagentv1.AgentRun{})
			if after.Status.Phase != exagentv1.PhaseCancelled || after.Status.Claim != nil {
				t.Errorf("run is %s with claim %v, want Cancelled and unclaimed", after.Status.Phase, after.Status.Claim)
			}
			if phase == exagentv1.PhaseRunning && after.Status.Calls[0].State != exagentv1.CallUncertain {
				t.Errorf("the call in flight is %s, want Uncertain inside the cancelled run", after.Status.Calls[0].State)
			}
		})
	}

	ended := map[string]exagentv1.RunPhase{"c-done": exagentv1.PhaseSucceeded, "c-gone": exagentv1.PhaseCancelled}
	for name, phase := range ended {
		t.Run("refused when "+string(phase), func(t *testing.T) {
			run := setPhase(t, createPausedRun(t, dave, s.ns, name, "payments", false), phase)
			d := cancelOf(s.ns, name+"-cancel", run)
			err := alice.Create(t.Context(), d)
			if err == nil || !strings.Contains(err.Error(), "it takes no more decisions") {
				t.Fatalf("got %v, want the cancel refused: the run has ended", err)
			}
			assertAbsent(t, d)
		})
	}

	t.Run("a stale revision is refused with what to do", func(t *testing.T) {
		run := get(t, s.ns, runBilling, &exagentv1.AgentRun{})
		d := cancelOf(s.ns, "stale-cancel", run)
		d.Spec.Revision = 7
		err := alice.Create(t.Context(), d)
		if err == nil || !strings.Contains(err.Error(), "the run is at revision 1: it changed since you looked") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestResolveCancelledAdmission: after a cancel, an Uncertain call of the
// Cancelled run is resolved for the record through admission; a Retry is
// refused there: nothing runs again.
func TestResolveCancelledAdmission(t *testing.T) {
	s := newScenario(t)
	startDecisionController(t, s.ns)
	run := get(t, s.ns, runUncertain, &exagentv1.AgentRun{})
	c := cancelOf(s.ns, "cancel-u", run)
	if err := as(t, "alice").Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if got := waitForResult(t, c); got.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("cancel = %s: %s", got.Status.Phase, got.Status.Message)
	}
	grace := as(t, "grace")
	retry := with(resolve(s.ns, "grace-retries", runUncertain), func(d *exagentv1.ApprovalDecision) { d.Spec.Outcome = exagentv1.ResolveRetry })
	if err := grace.Create(t.Context(), retry); err == nil || !strings.Contains(err.Error(), "nothing runs again") {
		t.Fatalf("retry on a cancelled run: got %v, want it refused", err)
	}
	rec := with(resolve(s.ns, "grace-records", runUncertain), func(d *exagentv1.ApprovalDecision) {
		d.Spec.Revision, d.Spec.PayloadHash = 1, payloadHash // what the plugin binds: the run's revision, the call's hash
	})
	if err := grace.Create(t.Context(), rec); err != nil {
		t.Fatalf("resolve for the record refused: %v", err)
	}
	if got := waitForResult(t, rec); got.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("resolve = %s: %s", got.Status.Phase, got.Status.Message)
	}
	after := get(t, s.ns, runUncertain, &exagentv1.AgentRun{})
	if after.Status.Phase != exagentv1.PhaseCancelled || after.Status.Calls[0].State != exagentv1.CallSucceeded ||
		after.Status.Calls[0].Outcome.Evidence != "the payment shows in the ledger" {
		t.Errorf("run %s, call %s %+v", after.Status.Phase, after.Status.Calls[0].State, after.Status.Calls[0].Outcome)
	}
}

func orNotStarted(p exagentv1.RunPhase) string {
	if p == "" {
		return "not started"
	}
	return string(p)
}
