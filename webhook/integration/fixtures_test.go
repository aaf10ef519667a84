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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

const payloadHash = "sha256:0f1e2d3c"

// createAgent creates, as the admin, an Agent whose decisions are limited
// to the payments-approvers group and forbid self-approval.
func createAgent(t *testing.T, ns, name string) *exagentv1.Agent {
	t.Helper()
	a := fixture.MakeAgent(name, ns).
		Script(fixture.CallTurn("c1", "pay", map[string]any{"amount": 500})).
		Tool(exagentv1.ToolSpec{
			Name:       "pay",
			Parameters: fixture.RawJSON(`{"type":"object","properties":{"amount":{"type":"number"}}}`),
			HTTP:       &exagentv1.HTTPTool{URL: "http://127.0.0.1:1/pay"},
		}).
		Rule("big", exagentv1.PolicyAsk, "args.amount > 100", "pay").
		ApproverGroups("payments-approvers").ForbidSelf().Obj()
	if err := admin.Create(t.Context(), a); err != nil {
		t.Fatalf("creating Agent %s: %v", name, err)
	}
	return a
}

// createPausedRun creates a run of agentName as c (its requester), then
// writes — as the admin, standing in for the controller — a paused status:
// AwaitingApproval with one pending approval a1 for call c1. uncertain
// instead leaves call c1 Uncertain with no approval.
func createPausedRun(t *testing.T, c client.Client, ns, name, agentName string, uncertain bool,
	mut ...func(*exagentv1.AgentRunSpec)) *exagentv1.AgentRun {
	t.Helper()
	r := fixture.MakeRun(name, ns).Agent(agentName).Input("pay invoice 42").Obj()
	for _, m := range mut {
		m(&r.Spec)
	}
	if err := c.Create(t.Context(), r); err != nil {
		t.Fatalf("creating AgentRun %s: %v", name, err)
	}
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	r.Status = exagentv1.AgentRunStatus{
		Phase:    exagentv1.PhaseAwaitingApproval,
		Revision: 1,
		Cursor:   exagentv1.Cursor{Step: 1, Stage: exagentv1.StageBatch},
		Calls: []exagentv1.ToolCall{{
			ID: "c1", Step: 0, Tool: "pay", Args: `{"amount":500}`, PayloadHash: payloadHash, State: exagentv1.CallPending,
		}},
		Approvals: []exagentv1.Approval{{
			ID: "a1", CallID: "c1", PayloadHash: payloadHash, Revision: 1, State: exagentv1.ApprovalPending, RequestedAt: now,
		}},
		PendingApprovals: 1,
	}
	if uncertain {
		r.Status.Phase = exagentv1.PhaseUncertain
		r.Status.Calls[0].State = exagentv1.CallUncertain
		r.Status.Approvals, r.Status.PendingApprovals = nil, 0
	}
	if err := admin.Status().Update(t.Context(), r); err != nil {
		t.Fatalf("pausing AgentRun %s: %v", name, err)
	}
	return r
}

// approve is a decision as the kubectl plugin sends it: approvalID,
// revision and payload hash of what the decider saw.
func approve(ns, name, run string) *exagentv1.ApprovalDecision {
	return fixture.MakeDecision(name, ns, run).
		Approve(exagentv1.Approval{ID: "a1", Revision: 1, PayloadHash: payloadHash}).Reason("ok").Obj()
}

// resolve is a Resolve of call c1 as Succeeded, with evidence and no view
// of the run (no payload hash, no revision).
func resolve(ns, name, run string) *exagentv1.ApprovalDecision {
	return fixture.MakeDecision(name, ns, run).
		Resolve(exagentv1.ToolCall{ID: "c1"}, 0, exagentv1.ResolveSucceeded, "the payment shows in the ledger").Obj()
}

// setPhase rewrites, as the admin standing in for the controller, the
// status of run so that it is in phase with the journal a run in that phase
// has: nothing for "", a fresh transcript for Queued, a claim and a call in
// flight for Running, the call approved for Approved, a finished run for
// Succeeded and Cancelled.
func setPhase(t *testing.T, run *exagentv1.AgentRun, phase exagentv1.RunPhase) *exagentv1.AgentRun {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	st := &run.Status
	st.Phase = phase
	switch phase {
	case exagentv1.PhaseQueued:
		st.Calls, st.Approvals, st.PendingApprovals = nil, nil, 0
		st.Cursor = exagentv1.Cursor{Stage: exagentv1.StageRequest}
	case exagentv1.PhaseRunning:
		st.Approvals, st.PendingApprovals = nil, 0
		st.Attempts = 1
		st.Claim = &exagentv1.Claim{Holder: "manager-a", Attempt: 1, LeaseExpiresAt: metav1.NewMicroTime(now.Add(time.Hour))}
		st.Calls[0].State, st.Calls[0].Attempt, st.Calls[0].IdempotencyKey = exagentv1.CallStarted, 1, string(run.UID)+"/c1"
	case exagentv1.PhaseApproved:
		st.Calls[0].State = exagentv1.CallApproved
		st.Approvals[0].State, st.PendingApprovals = exagentv1.ApprovalApproved, 0
	case exagentv1.PhaseSucceeded, exagentv1.PhaseCancelled:
		st.Approvals[0].State, st.PendingApprovals = exagentv1.ApprovalCancelled, 0
	}
	if err := admin.Status().Update(t.Context(), run); err != nil {
		t.Fatalf("setting run %s %s: %v", run.Name, phase, err)
	}
	return run
}
