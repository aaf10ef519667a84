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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// TestQuorumDecisionsAppliedOutOfOrder: under a quorum of two, alice's
// plain vote and bob's edit are both stored while nobody applies
// decisions (both pass admission's checks on the run as it then was: no
// vote yet). Whichever the controller applies second is Rejected — an edit
// after a vote, or a vote on the model's version after an edit — so one
// person never meets a two-person rule alone: the approval still waits
// with one vote and the tool is never called.
func TestQuorumDecisionsAppliedOutOfOrder(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	agent := refundAgent(ts)
	agent.Policy.Rules[0].Quorum = &exagentv1.Quorum{Approvals: 2}
	h.createAgent("payments", agent)
	h.createRun("two", "payments")
	m := h.startManager(controllers.Options{})
	paused := h.waitPhase("two", exagentv1.PhaseAwaitingApproval)
	m.stop() // from here on only the decision controller below acts

	a := pendingApproval(t, paused)
	if a.Quorum == nil {
		t.Fatalf("approval %s carries no quorum", a.ID)
	}
	plain := h.decide(alice, h.decision("two", "alice-vote").Approve(a).Reason("as proposed"))
	edit := h.decide(bob, h.decision("two", "bob-edit").Approve(a).Reason("smaller").Apply(func(d *exagentv1.ApprovalDecision) {
		d.Spec.Arguments = &runtime.RawExtension{Raw: []byte(`{"amount":1}`)}
	}))
	h.startDecisionsOnly(nil, nil)

	got := map[string]*exagentv1.ApprovalDecision{plain.Name: h.waitDecision(plain.Name), edit.Name: h.waitDecision(edit.Name)}
	var applied, rejected []string
	for name, d := range got {
		switch d.Status.Phase {
		case exagentv1.DecisionApplied:
			applied = append(applied, name)
		case exagentv1.DecisionRejected:
			rejected = append(rejected, name)
			if !strings.Contains(d.Status.Message, "only the first vote may edit") && !strings.Contains(d.Status.Message, "does not count") {
				t.Errorf("decision %s rejected with %q, want the version refusal", name, d.Status.Message)
			}
		}
	}
	if len(applied) != 1 || len(rejected) != 1 {
		t.Fatalf("applied %v rejected %v: want exactly one of the two applied", applied, rejected)
	}
	run := h.waitPhase("two", exagentv1.PhaseAwaitingApproval)
	ap := run.Status.Approvals[0]
	if ap.State != exagentv1.ApprovalPending || len(ap.Votes) != 1 || ap.QuorumMissing() != "needs 1 more approval" {
		t.Fatalf("approval %s with votes %+v (%s), want pending with one vote", ap.State, ap.Votes, ap.QuorumMissing())
	}
	if v := ap.Votes[0]; v.PayloadHash != ap.CurrentPayloadHash() {
		t.Errorf("the counted vote journals %q, the call that would run is %q", v.PayloadHash, ap.CurrentPayloadHash())
	}
	if n := len(ts.journal()); n != 0 {
		t.Errorf("the tool was called %d times under a quorum only one person met", n)
	}
}
