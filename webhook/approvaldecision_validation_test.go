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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

func TestValidateApprovalDecision(t *testing.T) {
	cases := map[string]struct {
		d, old *exagentv1.ApprovalDecision
		want   []string
	}{
		"approve":              {d: decision()},
		"cancel without id":    {d: decision(func(d *exagentv1.ApprovalDecision) { d.Spec.Decision, d.Spec.ApprovalID = exagentv1.DecisionCancel, "" })},
		"approve needs its id": {d: decision(func(d *exagentv1.ApprovalDecision) { d.Spec.ApprovalID = "" }), want: []string{"FieldValueRequired spec.approvalID"}},
		"resolve": {d: decision(func(d *exagentv1.ApprovalDecision) {
			d.Spec.Decision, d.Spec.ApprovalID, d.Spec.CallID, d.Spec.Outcome = exagentv1.DecisionResolve, "", "c1", exagentv1.ResolveFailed
		})},
		"resolve needs call and outcome": {
			d:    decision(func(d *exagentv1.ApprovalDecision) { d.Spec.Decision = exagentv1.DecisionResolve }),
			want: []string{"FieldValueRequired spec.callID", "FieldValueForbidden spec.approvalID", "FieldValueRequired spec.outcome"},
		},
		"outcome and evidence only with resolve": {
			d: decision(func(d *exagentv1.ApprovalDecision) {
				d.Spec.Outcome, d.Spec.Evidence, d.Spec.CallID = exagentv1.ResolveRetry, "logs", "c1"
			}),
			want: []string{"FieldValueForbidden spec.callID", "FieldValueForbidden spec.outcome", "FieldValueForbidden spec.evidence"},
		},
		"unknown decision": {
			d:    decision(func(d *exagentv1.ApprovalDecision) { d.Spec.Decision = "Maybe" }),
			want: []string{"FieldValueNotSupported spec.decision"},
		},
		"bad run name": {
			d:    decision(func(d *exagentv1.ApprovalDecision) { d.Spec.RunRef.Name = "Not_A_Name" }),
			want: []string{"FieldValueInvalid spec.runRef.name"},
		},
		"run UID past its bound": {
			d:    decision(func(d *exagentv1.ApprovalDecision) { d.Spec.RunUID = strings.Repeat("u", exagentv1.MaxRunUIDLength+1) }),
			want: []string{"FieldValueTooLong spec.runUID"},
		},
		"actor without username": {
			d:    decision(func(d *exagentv1.ApprovalDecision) { d.Spec.Actor = &exagentv1.Actor{} }),
			want: []string{"FieldValueRequired spec.actor.username"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errKeys(webhook.ValidateApprovalDecision(tc.d, tc.old))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateDecisionRun: a decision bound to another run's UID — the
// run deleted and re-created under the same name since its decider
// looked — is refused with both UIDs and what to do; one without a
// runUID (GitOps) or with the run's own passes.
func TestValidateDecisionRun(t *testing.T) {
	current := run(func(r *exagentv1.AgentRun) { r.UID = "uid-now" })
	cases := map[string]struct {
		runUID  string
		wantMsg string
	}{
		"the run's own UID": {runUID: "uid-now"},
		"no UID (GitOps)":   {},
		"a re-created run": {runUID: "uid-before",
			wantMsg: "the run was re-created since you looked (uid uid-before, now uid-now): reload / kubectl approve show again"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := decision(func(d *exagentv1.ApprovalDecision) { d.Spec.RunUID = tc.runUID })
			errs := webhook.ValidateDecisionRun(d, current)
			if tc.wantMsg == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "spec.runUID" || errs[0].Detail != tc.wantMsg {
				t.Fatalf("errors %v, want spec.runUID: %q", errs, tc.wantMsg)
			}
		})
	}
}

func TestValidateDecisionTarget(t *testing.T) {
	resolve := func(d *exagentv1.ApprovalDecision) {
		d.Spec.Decision, d.Spec.ApprovalID, d.Spec.CallID, d.Spec.Outcome = exagentv1.DecisionResolve, "", "c1", exagentv1.ResolveSucceeded
	}
	cases := map[string]struct {
		d    *exagentv1.ApprovalDecision
		run  *exagentv1.AgentRun
		want []string
	}{
		"pending approval": {d: decision(), run: run()},
		"no revision or hash given": {
			d:   decision(func(d *exagentv1.ApprovalDecision) { d.Spec.Revision, d.Spec.PayloadHash = 0, "" }),
			run: run(),
		},
		"unknown approval": {
			d:    decision(func(d *exagentv1.ApprovalDecision) { d.Spec.ApprovalID = "a9" }),
			run:  run(),
			want: []string{"FieldValueNotFound spec.approvalID"},
		},
		"approval already decided": {
			d:    decision(),
			run:  run(func(r *exagentv1.AgentRun) { r.Status.Approvals[0].State = exagentv1.ApprovalApproved }),
			want: []string{"FieldValueInvalid spec.approvalID"},
		},
		"stale revision and payload": {
			d:    decision(func(d *exagentv1.ApprovalDecision) { d.Spec.Revision, d.Spec.PayloadHash = 2, "sha256:other" }),
			run:  run(),
			want: []string{"FieldValueInvalid spec.revision", "FieldValueInvalid spec.payloadHash"},
		},
		"terminal run": {
			d:    decision(),
			run:  run(func(r *exagentv1.AgentRun) { r.Status.Phase = exagentv1.PhaseSucceeded }),
			want: []string{"FieldValueInvalid spec.runRef.name"},
		},
		"replay of an applied operation passes to the controller": {
			d: decision(),
			run: run(func(r *exagentv1.AgentRun) {
				r.Status.Approvals[0].State = exagentv1.ApprovalApproved
				r.Status.Receipts = []exagentv1.Receipt{{OperationID: "d1", Decision: "Approve"}}
			}),
		},
		"cancel of a waiting run": {
			d:   decision(func(d *exagentv1.ApprovalDecision) { d.Spec.Decision, d.Spec.ApprovalID = exagentv1.DecisionCancel, "" }),
			run: run(),
		},
		"cancel, with a stale revision": {
			d: decision(func(d *exagentv1.ApprovalDecision) {
				d.Spec.Decision, d.Spec.ApprovalID, d.Spec.Revision = exagentv1.DecisionCancel, "", 3
			}),
			run:  run(),
			want: []string{"FieldValueInvalid spec.revision"},
		},
		"cancel without a revision, of whatever the run does now": {
			d: decision(func(d *exagentv1.ApprovalDecision) {
				d.Spec.Decision, d.Spec.ApprovalID, d.Spec.Revision = exagentv1.DecisionCancel, "", 0
			}),
			run: run(func(r *exagentv1.AgentRun) { r.Status.Revision = 5 }),
		},
		"resolve of a cancelled run's uncertain call, for the record": {
			d: decision(resolve),
			run: run(func(r *exagentv1.AgentRun) {
				r.Status.Phase, r.Status.Calls[0].State = exagentv1.PhaseCancelled, exagentv1.CallUncertain
			}),
		},
		"retry of a cancelled run's uncertain call": {
			d: decision(resolve, func(d *exagentv1.ApprovalDecision) { d.Spec.Outcome = exagentv1.ResolveRetry }),
			run: run(func(r *exagentv1.AgentRun) {
				r.Status.Phase, r.Status.Calls[0].State = exagentv1.PhaseCancelled, exagentv1.CallUncertain
			}),
			want: []string{"FieldValueInvalid spec.outcome"},
		},
		"resolve of another ended run's uncertain call": {
			d: decision(resolve),
			run: run(func(r *exagentv1.AgentRun) {
				r.Status.Phase, r.Status.Calls[0].State = exagentv1.PhaseFailed, exagentv1.CallUncertain
			}),
			want: []string{"FieldValueInvalid spec.runRef.name"},
		},
		"resolve of an uncertain call": {
			d:   decision(resolve),
			run: run(func(r *exagentv1.AgentRun) { r.Status.Calls[0].State = exagentv1.CallUncertain }),
		},
		"resolve of a call that is not uncertain": {
			d:    decision(resolve),
			run:  run(),
			want: []string{"FieldValueInvalid spec.callID"},
		},
		"resolve of an unknown call": {
			d:    decision(resolve, func(d *exagentv1.ApprovalDecision) { d.Spec.CallID = "c9" }),
			run:  run(),
			want: []string{"FieldValueNotFound spec.callID"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errKeys(webhook.ValidateDecisionTarget(tc.d, tc.run))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCancelTargetEveryPhase: a Cancel of the whole run is admitted in
// every phase that has not ended — a run not started yet included — and
// refused in every ended one.
func TestCancelTargetEveryPhase(t *testing.T) {
	cancel := decision(func(d *exagentv1.ApprovalDecision) {
		d.Spec.Decision, d.Spec.ApprovalID, d.Spec.PayloadHash = exagentv1.DecisionCancel, "", ""
	})
	phases := map[exagentv1.RunPhase][]string{
		"":                              nil,
		exagentv1.PhaseQueued:           nil,
		exagentv1.PhaseRunning:          nil,
		exagentv1.PhaseAwaitingApproval: nil,
		exagentv1.PhaseApproved:         nil,
		exagentv1.PhaseUncertain:        nil,
		exagentv1.PhaseSucceeded:        {"FieldValueInvalid spec.runRef.name"},
		exagentv1.PhaseFailed:           {"FieldValueInvalid spec.runRef.name"},
		exagentv1.PhaseDenied:           {"FieldValueInvalid spec.runRef.name"},
		exagentv1.PhaseCancelled:        {"FieldValueInvalid spec.runRef.name"},
		exagentv1.PhaseExpired:          {"FieldValueInvalid spec.runRef.name"},
	}
	for phase, want := range phases {
		t.Run(string(phase), func(t *testing.T) {
			r := run(func(r *exagentv1.AgentRun) { r.Status.Phase = phase })
			if diff := cmp.Diff(want, errKeys(webhook.ValidateDecisionTarget(cancel, r))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
