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
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// refundAgent asks for approval of one refund, then answers.
func refundAgent(ts *toolServer) exagentv1.AgentSpec {
	return exagentv1.AgentSpec{
		Instructions: "You refund customers.",
		Model: fixture.Scripted(
			fixture.CallTurn("refund-1", "refund", map[string]any{"amount": 5}),
			fixture.TextTurn("refunded 5"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
		Policy: fixture.AskPolicy("refund"),
	}
}

// TestPauseApproveResume: the run pauses before the refund, nothing runs
// until alice approves, then the refund runs exactly once with its
// Idempotency-Key and the run succeeds.
func TestPauseApproveResume(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("payments", refundAgent(ts))
	h.createRun("r1", "payments")

	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	if c := meta.FindStatusCondition(paused.Status.Conditions, exagentv1.ConditionAwaitingApproval); c == nil || c.Status != "True" {
		t.Fatalf("AwaitingApproval condition = %+v, want True", c)
	}
	if paused.Status.Claim != nil {
		t.Errorf("a paused run holds a claim: %+v", paused.Status.Claim)
	}
	if got := ts.journal(); len(got) != 0 {
		t.Fatalf("tool ran before approval: %+v", got)
	}

	h.approve(paused, "approve-1")
	done := h.waitPhase("r1", exagentv1.PhaseSucceeded)
	if d := h.waitDecision("r1-approve-1"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Errorf("decision phase = %s (%s), want Applied", d.Status.Phase, d.Status.Message)
	}

	want := []toolRequest{{Path: "/refund", Key: string(done.UID) + "/refund-1", Run: h.ns + "/r1", Call: "refund-1", Body: `{"amount":5}`}}
	if diff := cmp.Diff(want, ts.journal()); diff != "" {
		t.Errorf("tool journal (-want +got):\n%s", diff)
	}
	if done.Status.Output != "refunded 5" {
		t.Errorf("output = %q", done.Status.Output)
	}
	if done.Status.ObservedGeneration != done.Generation {
		t.Errorf("observedGeneration = %d, want %d", done.Status.ObservedGeneration, done.Generation)
	}
	if c := meta.FindStatusCondition(done.Status.Conditions, exagentv1.ConditionReady); c == nil || c.Status != "True" {
		t.Errorf("Ready = %+v, want True", c)
	}
	h.waitEvents("r1", "ApprovalRequested", "RunPaused", "DecisionApplied", "RunResumed", "RunSucceeded")
}
