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
	"crypto/rand"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/store"
)

// slowReview is the production verifier whose SubjectAccessReview takes
// long: the clock moves on by lag while it runs.
type slowReview struct {
	controllers.SARVerifier
	clock *clocktesting.FakeClock
	lag   time.Duration
}

func (v slowReview) Verify(ctx context.Context, d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun, agent *exagentv1.Agent) error {
	err := v.SARVerifier.Verify(ctx, d, run, agent)
	v.clock.Step(v.lag)
	return err
}

// TestDecisionClockAfterReview: an approval that expires while the
// controller's SubjectAccessReview runs is not approved — the decision is
// judged at the instant it is applied, read after the review.
func TestDecisionClockAfterReview(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.createAgent("refunds", refundAgent(ts))
	h.createRun("slow", "refunds", func(r *exagentv1.AgentRunSpec) { r.ApprovalTimeout = "1h" })
	m := h.startManager(controllers.Options{})
	paused := h.waitPhase("slow", exagentv1.PhaseAwaitingApproval)
	m.stop() // from here on only the decision controller below acts

	a := pendingApproval(t, paused)
	clk := clocktesting.NewFakeClock(a.ExpiresAt.Add(-time.Minute)) // a minute before the expiry
	h.startDecisionsOnly(clk, slowReview{SARVerifier: controllers.SARVerifier{Client: env().Client}, clock: clk, lag: 2 * time.Minute})
	d := h.waitDecision(h.approve(paused, "late").Name)
	if d.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(d.Status.Message, "expired") {
		t.Fatalf("decision = %s (%s), want Rejected: the approval expired during the review", d.Status.Phase, d.Status.Message)
	}
	run := h.waitPhase("slow", exagentv1.PhaseAwaitingApproval)
	if run.Status.Approvals[0].State != exagentv1.ApprovalPending || len(ts.journal()) != 0 {
		t.Errorf("approval %s, %d effects; want it still pending and nothing run", run.Status.Approvals[0].State, len(ts.journal()))
	}
}

// TestNeverDeciders: the controller's own re-check refuses the run's
// ServiceAccount and the manager's identity as deciders — both hold the
// approve verb here, so RBAC alone would let them through — while a
// human approver still decides.
func TestNeverDeciders(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ctx := context.Background()
	for _, role := range []string{"test-decider", "test-approver"} {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "robot-" + role, Namespace: h.ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: h.ns}},
		}
		if err := h.c.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	manager, err := authz.Self(ctx, env().Client)
	if err != nil {
		t.Fatal(err)
	}
	h.createAgent("refunds", refundAgent(ts))
	h.createRun("own", "refunds", func(r *exagentv1.AgentRunSpec) { r.ServiceAccountName = "robot" })
	h.startManager(controllers.Options{}) // its identity: env().Config's, the one asked above
	paused := h.waitPhase("own", exagentv1.PhaseAwaitingApproval)
	a := pendingApproval(t, paused)

	cases := map[string]struct {
		actor   exagentv1.Actor
		wantMsg string
	}{
		"robot": {
			actor:   exagentv1.Actor{Username: "system:serviceaccount:" + h.ns + ":robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + h.ns, "system:authenticated"}},
			wantMsg: `is the run's own ServiceAccount (spec.serviceAccountName "robot")`,
		},
		"manager": {
			actor:   exagentv1.Actor{Username: manager, Groups: []string{"system:masters", "system:authenticated"}},
			wantMsg: "is the exagent manager's own identity",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			actor := tc.actor
			// No webhook in this envtest: the admin stores what a bypassed
			// webhook would let through, with the actor stamped.
			d := &exagentv1.ApprovalDecision{
				ObjectMeta: metav1.ObjectMeta{Name: "own-" + name, Namespace: h.ns},
				Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: "own"}, Decision: exagentv1.DecisionApprove,
					ApprovalID: a.ID, PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: &actor},
			}
			if err := h.c.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
			got := h.waitDecision(d.Name)
			if got.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(got.Status.Message, tc.wantMsg) {
				t.Errorf("decision = %s (%s), want Rejected with %q", got.Status.Phase, got.Status.Message, tc.wantMsg)
			}
		})
	}
	if run := h.waitPhase("own", exagentv1.PhaseAwaitingApproval); run.Status.Approvals[0].State != exagentv1.ApprovalPending {
		t.Fatalf("a never-decider changed the approval: %s", run.Status.Approvals[0].State)
	}
	if d := h.waitDecision(h.approve(paused, "alice").Name); d.Status.Phase != exagentv1.DecisionApplied {
		t.Errorf("alice's approval = %s: %s", d.Status.Phase, d.Status.Message)
	}
	h.waitPhase("own", exagentv1.PhaseSucceeded)
}

// TestRequesterSignature: with the decision signing key configured, forbidSelfApproval
// trusts spec.requestedBy only when the admission webhook sealed it. A run
// stored past a bypassed webhook naming someone else as its requester has
// an unknown requester: nobody decides on it. A sealed run works as
// always; without a signature ("none") spec.requestedBy is trusted as stored.
func TestRequesterSignature(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	signer, err := authz.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	ts := newToolServer(t)
	agent := refundAgent(ts)
	agent.Policy.ForbidSelfApproval = true
	ctx := context.Background()

	// newRun creates, as the admin and past any webhook, a run "requested
	// by" bob; sealed says whether the webhook's signature is on it.
	newRun := func(h *harness, name string, sealed bool) {
		r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
			Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "refunds"}, Input: "please do it",
				RequestedBy: &exagentv1.Actor{Username: "bob", Groups: []string{"system:authenticated"}}}}
		if sealed {
			if err := signer.SignRequester(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.c.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// decideSealed is alice's approval as the webhook would admit it.
	decideSealed := func(h *harness, run *exagentv1.AgentRun, name string) *exagentv1.ApprovalDecision {
		a := pendingApproval(t, run)
		actor := users[alice].actor
		d := &exagentv1.ApprovalDecision{
			ObjectMeta: metav1.ObjectMeta{Name: run.Name + "-" + name, Namespace: h.ns},
			Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: run.Name}, Decision: exagentv1.DecisionApprove,
				ApprovalID: a.ID, PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: &actor, OperationID: run.Name + "-" + name},
		}
		if err := signer.Sign(d, run.UID); err != nil {
			t.Fatal(err)
		}
		if err := users[alice].client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		return h.waitDecision(d.Name)
	}

	t.Run("sealed", func(t *testing.T) {
		h := newHarness(t)
		h.createAgent("refunds", agent)
		newRun(h, "forged", false)
		newRun(h, "stamped", true)
		h.startManager(controllers.Options{Signer: signer})

		forged := h.waitPhase("forged", exagentv1.PhaseAwaitingApproval)
		d := decideSealed(h, forged, "alice")
		if d.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(d.Status.Message, "forbidSelfApproval: the run's requester is unknown") ||
			!strings.Contains(d.Status.Message, authz.RequesterSignatureAnnotation) {
			t.Errorf("decision on a run with an unsealed requester = %s (%s), want Rejected: requester unknown", d.Status.Phase, d.Status.Message)
		}
		stamped := h.waitPhase("stamped", exagentv1.PhaseAwaitingApproval)
		if d := decideSealed(h, stamped, "alice"); d.Status.Phase != exagentv1.DecisionApplied {
			t.Errorf("decision on a sealed run = %s: %s", d.Status.Phase, d.Status.Message)
		}
		h.waitPhase("stamped", exagentv1.PhaseSucceeded)
	})
	t.Run("no signature configured", func(t *testing.T) {
		h := newHarness(t)
		h.createAgent("refunds", agent)
		newRun(h, "plain", false)
		h.startManager(controllers.Options{})
		plain := h.waitPhase("plain", exagentv1.PhaseAwaitingApproval)
		if d := h.waitDecision(h.approve(plain, "alice").Name); d.Status.Phase != exagentv1.DecisionApplied {
			t.Errorf("without a signature, spec.requestedBy is trusted as stored: %s (%s)", d.Status.Phase, d.Status.Message)
		}
	})
}

// TestCorruptStatusFailsTheRun: a paused run whose stored approval names a
// call that is not in the journal (a bad restore, a hand edit) ends Failed
// with reason CorruptStatus at the first decision — the decision is
// rejected with why — instead of panicking the controller.
func TestCorruptStatusFailsTheRun(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.createAgent("refunds", refundAgent(ts))
	h.createRun("broken", "refunds")
	h.startManager(controllers.Options{})
	paused := h.waitPhase("broken", exagentv1.PhaseAwaitingApproval)
	corrupt := paused.Status.DeepCopy()
	corrupt.Approvals[0].CallID = "ghost"
	h.setStatus(paused, *corrupt)

	d := h.waitDecision(h.approve(paused, "ok").Name)
	if d.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(d.Status.Message, "the run's status is corrupt") {
		t.Errorf("decision = %s (%s), want Rejected: corrupt status", d.Status.Phase, d.Status.Message)
	}
	run := h.waitPhase("broken", exagentv1.PhaseFailed)
	if run.Status.Reason != exagentv1.ReasonCorruptStatus || !strings.Contains(run.Status.Message, `names call "ghost"`) ||
		!strings.Contains(run.Status.Message, "create a new run") {
		t.Errorf("reason %s message %q", run.Status.Reason, run.Status.Message)
	}
	if len(ts.journal()) != 0 {
		t.Errorf("a corrupt run made %d tool calls", len(ts.journal()))
	}
}

// TestCacheDropsEndedRunsBulk: the informer cache keeps, of an ended run,
// no transcript and no call arguments or results; a live run is kept whole.
func TestCacheDropsEndedRunsBulk(t *testing.T) {
	var transform toolscache.TransformFunc
	for obj, by := range store.CacheOptions().ByObject {
		if _, ok := obj.(*exagentv1.AgentRun); ok {
			transform = by.Transform
		}
	}
	if transform == nil {
		t.Fatal("no AgentRun transform in the cache options")
	}
	mk := func(phase exagentv1.RunPhase) *exagentv1.AgentRun {
		return &exagentv1.AgentRun{
			ObjectMeta: metav1.ObjectMeta{Name: "r", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Status: exagentv1.AgentRunStatus{
				Phase:   phase,
				History: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "hi"}},
				Calls: []exagentv1.ToolCall{{ID: "c1", Tool: "pay", Args: `{"amount":5}`, State: exagentv1.CallSucceeded,
					PayloadHash: "sha256:p", Outcome: &exagentv1.CallOutcome{Succeeded: true, Result: "paid", ResolvedBy: "grace"}}},
			},
		}
	}
	out, err := transform(mk(exagentv1.PhaseCancelled))
	if err != nil {
		t.Fatal(err)
	}
	ended := out.(*exagentv1.AgentRun)
	c := ended.Status.Calls[0]
	if ended.Status.History != nil || c.Args != "" || c.Outcome.Result != "" || ended.ManagedFields != nil {
		t.Errorf("ended run kept its bulk: history %v args %q result %q", ended.Status.History, c.Args, c.Outcome.Result)
	}
	if c.ID != "c1" || c.State != exagentv1.CallSucceeded || c.PayloadHash != "sha256:p" || c.Outcome.ResolvedBy != "grace" {
		t.Errorf("ended run lost its journal's skeleton: %+v", c)
	}
	out, err = transform(mk(exagentv1.PhaseRunning))
	if err != nil {
		t.Fatal(err)
	}
	if live := out.(*exagentv1.AgentRun); live.Status.History == nil || live.Status.Calls[0].Args == "" || live.Status.Calls[0].Outcome.Result == "" {
		t.Errorf("a live run was stripped: %+v", live.Status)
	}
}
