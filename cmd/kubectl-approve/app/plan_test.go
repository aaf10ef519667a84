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

package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestPlanDecisions(t *testing.T) {
	paused := makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(3).
		Call(call("call-0-0", "scale", `{"name":"web"}`, exagentv1.CallPending)).
		Approval(approval("call-0-0", "call-0-0", 3, exagentv1.ApprovalPending, time.Minute, time.Hour))
	two := makeRun("scale-two", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
		Call(call("a", "scale", `{"name":"web"}`, exagentv1.CallPending)).
		Call(call("b", "scale", `{"name":"api"}`, exagentv1.CallPending)).
		Approval(approval("a", "a", 1, exagentv1.ApprovalPending, time.Minute, 0)).
		Approval(approval("b", "b", 1, exagentv1.ApprovalPending, time.Minute, 0))
	uncertain := makeRun("charge", "demo").Phase(exagentv1.PhaseUncertain).Revision(4).
		Call(call("c1", "charge", `{"amount":5}`, exagentv1.CallUncertain))

	type want struct {
		ApprovalID, CallID, PayloadHash string
		Revision                        int64
		Decision                        exagentv1.DecisionKind
		Outcome                         exagentv1.ResolveOutcome
		GenerateName                    string
	}
	tests := map[string]struct {
		run     *exagentv1.AgentRun
		req     decisionRequest
		want    []want
		wantErr string
	}{
		"approve the only pending approval binds its hash and revision": {
			run: paused.Obj(), req: decisionRequest{Kind: exagentv1.DecisionApprove, Reason: "ok"},
			want: []want{{ApprovalID: "call-0-0", PayloadHash: "sha256:call-0-00123456789abcdef", Revision: 3, Decision: exagentv1.DecisionApprove, GenerateName: "scale-web-approve-"}},
		},
		"deny a named approval": {
			run: two.Obj(), req: decisionRequest{Kind: exagentv1.DecisionDeny, ApprovalID: "b"},
			want: []want{{ApprovalID: "b", PayloadHash: "sha256:b0123456789abcdef", Revision: 1, Decision: exagentv1.DecisionDeny, GenerateName: "scale-two-deny-"}},
		},
		"approve --all makes one decision per approval": {
			run: two.Obj(), req: decisionRequest{Kind: exagentv1.DecisionApprove, All: true},
			want: []want{
				{ApprovalID: "a", PayloadHash: "sha256:a0123456789abcdef", Revision: 1, Decision: exagentv1.DecisionApprove, GenerateName: "scale-two-approve-"},
				{ApprovalID: "b", PayloadHash: "sha256:b0123456789abcdef", Revision: 1, Decision: exagentv1.DecisionApprove, GenerateName: "scale-two-approve-"},
			},
		},
		"several pending and none named is refused with the list": {
			run: two.Obj(), req: decisionRequest{Kind: exagentv1.DecisionApprove},
			wantErr: `run "scale-two" has 2 pending approvals; name one (kubectl approve scale-two APPROVAL) or pass --all:
NAMESPACE   RUN         APPROVAL   TOOL    ARGS             REQUESTED   EXPIRES
demo        scale-two   a          scale   {"name":"web"}   60s         never
demo        scale-two   b          scale   {"name":"api"}   60s         never`,
		},
		"unknown approval": {
			run: two.Obj(), req: decisionRequest{Kind: exagentv1.DecisionApprove, ApprovalID: "zz"},
			wantErr: `run "scale-two" has no approval "zz" (pending: a, b)`,
		},
		"already decided approval": {
			run: makeRun("r", "demo").Phase(exagentv1.PhaseApproved).Approval(approval("a", "a", 0, exagentv1.ApprovalApproved, time.Minute, 0)).
				Approval(approval("b", "b", 0, exagentv1.ApprovalPending, time.Minute, 0)).Obj(),
			req: decisionRequest{Kind: exagentv1.DecisionApprove, ApprovalID: "a"}, wantErr: `approval "a" of run "r" is already Approved`,
		},
		"nothing pending": {
			run: makeRun("r", "demo").Phase(exagentv1.PhaseRunning).Obj(), req: decisionRequest{Kind: exagentv1.DecisionApprove},
			wantErr: `run "r" has no pending approvals (phase Running)`,
		},
		"terminal run": {
			run: makeRun("r", "demo").Phase(exagentv1.PhaseSucceeded).Obj(), req: decisionRequest{Kind: exagentv1.DecisionCancel},
			wantErr: `run "r" has already ended: Succeeded`,
		},
		"cancel with no pending approval, in every phase that has not ended": {
			run: makeRun("busy", "demo").Phase(exagentv1.PhaseRunning).Revision(2).Obj(), req: decisionRequest{Kind: exagentv1.DecisionCancel},
			want: []want{{Revision: 2, Decision: exagentv1.DecisionCancel, GenerateName: "busy-cancel-"}},
		},
		"cancel a run not started yet": {
			run: makeRun("new", "demo").Obj(), req: decisionRequest{Kind: exagentv1.DecisionCancel},
			want: []want{{Decision: exagentv1.DecisionCancel, GenerateName: "new-cancel-"}},
		},
		"cancel a Queued run": {
			run: makeRun("q", "demo").Phase(exagentv1.PhaseQueued).Obj(), req: decisionRequest{Kind: exagentv1.DecisionCancel},
			want: []want{{Decision: exagentv1.DecisionCancel, GenerateName: "q-cancel-"}},
		},
		"cancel an already cancelled run": {
			run: makeRun("r", "demo").Phase(exagentv1.PhaseCancelled).Obj(), req: decisionRequest{Kind: exagentv1.DecisionCancel},
			wantErr: `run "r" has already ended: Cancelled`,
		},
		"cancel without approval carries the run's revision": {
			run: paused.Obj(), req: decisionRequest{Kind: exagentv1.DecisionCancel},
			want: []want{{Revision: 3, Decision: exagentv1.DecisionCancel, GenerateName: "scale-web-cancel-"}},
		},
		"cancel a named approval carries its hash": {
			run: paused.Obj(), req: decisionRequest{Kind: exagentv1.DecisionCancel, ApprovalID: "call-0-0"},
			want: []want{{ApprovalID: "call-0-0", PayloadHash: "sha256:call-0-00123456789abcdef", Revision: 3, Decision: exagentv1.DecisionCancel, GenerateName: "scale-web-cancel-"}},
		},
		"resolve the only uncertain call": {
			run: uncertain.Obj(), req: decisionRequest{Kind: exagentv1.DecisionResolve, Outcome: exagentv1.ResolveSucceeded, Evidence: "ch_1"},
			want: []want{{CallID: "c1", PayloadHash: "sha256:c10123456789abcdef", Revision: 4, Decision: exagentv1.DecisionResolve, Outcome: exagentv1.ResolveSucceeded, GenerateName: "charge-resolve-"}},
		},
		"resolve a cancelled run's uncertain call, for the record": {
			run: makeRun("gone", "demo").Phase(exagentv1.PhaseCancelled).Revision(2).
				Call(call("c1", "charge", `{"amount":5}`, exagentv1.CallUncertain)).Obj(),
			req:  decisionRequest{Kind: exagentv1.DecisionResolve, Outcome: exagentv1.ResolveFailed, Evidence: "no charge"},
			want: []want{{CallID: "c1", PayloadHash: "sha256:c10123456789abcdef", Revision: 2, Decision: exagentv1.DecisionResolve, Outcome: exagentv1.ResolveFailed, GenerateName: "gone-resolve-"}},
		},
		"retry a cancelled run's uncertain call": {
			run: makeRun("gone", "demo").Phase(exagentv1.PhaseCancelled).Call(call("c1", "charge", `{}`, exagentv1.CallUncertain)).Obj(),
			req: decisionRequest{Kind: exagentv1.DecisionResolve, Outcome: exagentv1.ResolveRetry},
			wantErr: `run "gone" is Cancelled: nothing runs again, so a call cannot be retried; ` +
				`resolve it --outcome Succeeded or Failed to record what happened`,
		},
		"resolve on another ended run": {
			run: makeRun("r", "demo").Phase(exagentv1.PhaseFailed).Call(call("c1", "charge", `{}`, exagentv1.CallUncertain)).Obj(),
			req: decisionRequest{Kind: exagentv1.DecisionResolve, Outcome: exagentv1.ResolveFailed}, wantErr: `run "r" has already ended: Failed`,
		},
		"resolve a call that is not uncertain": {
			run: paused.Obj(), req: decisionRequest{Kind: exagentv1.DecisionResolve, CallID: "call-0-0", Outcome: exagentv1.ResolveFailed},
			wantErr: `tool call "call-0-0" of run "scale-web" is Pending, not Uncertain: only an Uncertain call can be resolved`,
		},
		"resolve with nothing uncertain": {
			run: paused.Obj(), req: decisionRequest{Kind: exagentv1.DecisionResolve, Outcome: exagentv1.ResolveFailed},
			wantErr: `run "scale-web" has no Uncertain tool calls (phase AwaitingApproval)`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := planDecisions(tc.run, tc.req, t0)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("want error %q, got none", tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Fatalf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotW []want
			for _, d := range got {
				if d.Spec.RunRef.Name != tc.run.Name || d.Namespace != tc.run.Namespace || d.Spec.Reason != tc.req.Reason {
					t.Errorf("decision %+v does not point at run %s/%s with reason %q", d.Spec, tc.run.Namespace, tc.run.Name, tc.req.Reason)
				}
				if d.Spec.Actor != nil {
					t.Errorf("the plugin must never write spec.actor")
				}
				gotW = append(gotW, want{
					ApprovalID: d.Spec.ApprovalID, CallID: d.Spec.CallID, PayloadHash: d.Spec.PayloadHash,
					Revision: d.Spec.Revision, Decision: d.Spec.Decision, Outcome: d.Spec.Outcome, GenerateName: d.GenerateName,
				})
			}
			if diff := cmp.Diff(tc.want, gotW); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAmbiguousErrorIsFormattedAsOneError(t *testing.T) {
	run := makeRun("r", "demo").Phase(exagentv1.PhaseAwaitingApproval).
		Approval(approval("a", "a", 0, exagentv1.ApprovalPending, time.Minute, 0)).
		Approval(approval("b", "b", 0, exagentv1.ApprovalPending, time.Minute, 0)).Obj()
	_, err := planDecisions(run, decisionRequest{Kind: exagentv1.DecisionApprove}, t0)
	if got := FormatError(err); !strings.HasPrefix(got, `error: run "r" has 2 pending approvals`) {
		t.Errorf("FormatError = %q", got)
	}
}
