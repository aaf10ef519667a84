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
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
)

// --- delegation fixtures ---

// tree creates the three Agents of the triage example: triage delegates a
// fix to fixer, which delegates the deploy to deployer, whose scale call
// needs a human (alice or bob by deployer's policy; only alice by
// triage's, which also forbids the requester carol).
func (h *harness) tree(ts *toolServer) {
	h.t.Helper()
	h.createAgent("triage", exagentv1.AgentSpec{
		Instructions: "You triage incidents.",
		Model:        fixture.Scripted(fixture.CallTurn("fix", "fix", map[string]any{"input": "fix the checkout outage"}), fixture.TextTurn("triage done")),
		Tools:        []exagentv1.ToolSpec{fixture.AgentTool("fix", "fixer")},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow, ForbidSelfApproval: true,
			Approvers: &exagentv1.Approvers{Users: []string{alice}}},
	})
	h.createAgent("fixer", exagentv1.AgentSpec{
		Instructions: "You fix services.",
		Model:        fixture.Scripted(fixture.CallTurn("deploy", "deploy", map[string]any{"input": "deploy v2 with 3 replicas"}), fixture.TextTurn("fixed: v2 is out")),
		Tools:        []exagentv1.ToolSpec{fixture.AgentTool("deploy", "deployer")},
		Policy:       exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		// A child acts as the root's ServiceAccount (asCarol's) only where
		// its Agent allows it.
		ServiceAccountNames: []string{"triage-bot"},
	})
	deployer := exagentv1.AgentSpec{
		Instructions: "You deploy.",
		Model:        fixture.Scripted(fixture.CallTurn("scale", "scale", map[string]any{"replicas": 3}), fixture.TextTurn("scaled to 3")),
		Tools:        []exagentv1.ToolSpec{fixture.HTTPTool("scale", ts.url("/scale"))},
		Policy:       fixture.AskPolicy("scale"),
	}
	deployer.ServiceAccountNames = []string{"triage-bot"}
	deployer.Policy.Approvers = &exagentv1.Approvers{Users: []string{alice, bob}}
	h.createAgent("deployer", deployer)
}

// asCarol makes carol the run's requester (admission would stamp her).
func asCarol(r *exagentv1.AgentRunSpec) {
	r.RequestedBy = &exagentv1.Actor{Username: "carol"}
	r.ServiceAccountName = "triage-bot"
}

func (h *harness) get(name string) *exagentv1.AgentRun {
	h.t.Helper()
	run := &exagentv1.AgentRun{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, run); err != nil {
		h.t.Fatalf("getting run %s: %v", name, err)
	}
	return run
}

// childOf is the name of the child of call callID of run parent (its
// name and UID: loop.ChildName).
func (h *harness) childOf(parent, callID string) string {
	h.t.Helper()
	return loop.ChildName(parent, string(h.get(parent).UID), callID)
}

// waitExists waits until run name exists.
func (h *harness) waitExists(name string) *exagentv1.AgentRun {
	h.t.Helper()
	return h.waitRun(name, "to exist", func(*exagentv1.AgentRun) bool { return true })
}

// treeRuns lists the runs of the tree whose root is root (root excluded).
func (h *harness) treeRuns(root string) []exagentv1.AgentRun {
	h.t.Helper()
	var list exagentv1.AgentRunList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns),
		client.MatchingLabels{exagentv1.LabelRootRun: root}); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// pausedTree starts the triage tree and waits until the root mirrors the
// grandchild's pending approval; it returns the child's and grandchild's names.
func (h *harness) pausedTree(root string) (child, grandchild string) {
	h.t.Helper()
	h.createRun(root, "triage", asCarol)
	child = h.childOf(root, "fix")
	h.waitExists(child)
	grandchild = h.childOf(child, "deploy")
	h.waitPhase(grandchild, exagentv1.PhaseAwaitingApproval)
	h.waitRun(root, "the root mirroring the grandchild's approval", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseAwaitingApproval && r.Status.Reason == exagentv1.ReasonChildAwaitingApproval
	})
	return child, grandchild
}

// TestDelegationTree: root → child → grandchild where only the grandchild
// asks. The root shows AwaitingApproval naming the grandchild and its tool;
// bob, allowed by the grandchild's Agent but not in the root's approvers,
// is refused; alice approves; the scale happens exactly once; the root
// Succeeds with the child's output in its transcript; the root's ledger is
// the sum of the tree's usage.
func TestDelegationTree(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.tree(ts)
	child, grandchild := h.pausedTree("triage-42")

	root := h.get("triage-42")
	if !strings.Contains(root.Status.Message, grandchild) || !strings.Contains(root.Status.Message, "scale") {
		t.Errorf("root message %q does not name the grandchild %s and its tool", root.Status.Message, grandchild)
	}
	if c := meta.FindStatusCondition(root.Status.Conditions, exagentv1.ConditionAwaitingApproval); c == nil || c.Status != "True" {
		t.Errorf("root AwaitingApproval condition = %+v, want True", c)
	}
	if root.Status.Claim != nil {
		t.Errorf("the root holds a claim while its child works: %+v", root.Status.Claim)
	}
	if len(root.Status.Children) != 1 || root.Status.Children[0].Name != child || root.Status.Children[0].PendingApprovals != 1 {
		t.Errorf("root children = %+v, want %s with 1 pending approval", root.Status.Children, child)
	}
	c := h.get(child)
	if c.Labels[exagentv1.LabelParentRun] != "triage-42" || c.Labels[exagentv1.LabelRootRun] != "triage-42" {
		t.Errorf("child labels = %v", c.Labels)
	}
	if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != root.UID {
		t.Errorf("child ownerReferences = %+v, want the root", c.OwnerReferences)
	}
	if c.Spec.Input != "fix the checkout outage" || c.Spec.ServiceAccountName != "triage-bot" ||
		c.Spec.RequestedBy == nil || c.Spec.RequestedBy.Username != "carol" {
		t.Errorf("child spec = %+v: want the call's input, the parent's ServiceAccount, the root's requester", c.Spec)
	}
	gc := h.get(grandchild)
	if gc.Labels[exagentv1.LabelParentRun] != child || gc.Labels[exagentv1.LabelRootRun] != "triage-42" ||
		gc.Spec.RequestedBy == nil || gc.Spec.RequestedBy.Username != "carol" || len(gc.Spec.Delegation.Ancestry) != 2 {
		t.Errorf("grandchild = labels %v, spec %+v", gc.Labels, gc.Spec)
	}

	a := pendingApproval(t, gc)
	h.decide(bob, h.decision(grandchild, "bob").Approve(a))
	d := h.waitDecision(grandchild + "-bob")
	if d.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(d.Status.Message, "triage-42") {
		t.Fatalf("bob's decision = %s (%s), want Rejected by the root's approvers", d.Status.Phase, d.Status.Message)
	}
	if len(ts.journal()) != 0 {
		t.Fatalf("the scale ran before an allowed approval: %+v", ts.journal())
	}
	h.decide(alice, h.decision(grandchild, "alice").Approve(a))
	if d := h.waitDecision(grandchild + "-alice"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("alice's decision = %s (%s), want Applied", d.Status.Phase, d.Status.Message)
	}

	done := h.waitPhase("triage-42", exagentv1.PhaseSucceeded)
	if got := ts.journal(); len(got) != 1 || got[0].Key != string(gc.UID)+"/scale" {
		t.Errorf("scale effects = %+v, want exactly one with the grandchild's key", got)
	}
	if !historyContains(done, "fixed: v2 is out") || done.Status.Output != "triage done" {
		t.Errorf("root output %q; transcript without the child's output: %+v", done.Status.Output, done.Status.History)
	}
	cDone, gcDone := h.get(child), h.get(grandchild)
	if cDone.Status.Phase != exagentv1.PhaseSucceeded || gcDone.Status.Phase != exagentv1.PhaseSucceeded {
		t.Errorf("child %s, grandchild %s: want both Succeeded", cDone.Status.Phase, gcDone.Status.Phase)
	}
	// Each run makes two model requests and one tool call of its own.
	if l := done.Status.Ledger; l.Requests != 6 || l.ToolCalls != 3 {
		t.Errorf("root ledger = %d requests, %d tool calls; want the tree's 6 and 3", l.Requests, l.ToolCalls)
	}
	if l := cDone.Status.Ledger; l.Requests != 4 || l.ToolCalls != 2 {
		t.Errorf("child ledger = %d requests, %d tool calls; want its subtree's 4 and 2", l.Requests, l.ToolCalls)
	}
	if ch := done.Status.Children; len(ch) != 1 || !ch[0].Charged || ch[0].UID != string(cDone.UID) || ch[0].Phase != exagentv1.PhaseSucceeded {
		t.Errorf("root children = %+v, want the child charged and Succeeded", ch)
	}
	h.waitEvents("triage-42", "ChildStarted", "ChildPaused", "ChildEnded", "RunSucceeded")
}

// TestDelegationNarrowsToolCalls: the root may make 2 tool calls; its
// delegation is one, so the child may make one more: its second call
// fails the child cleanly and the root's model sees why.
func TestDelegationNarrowsToolCalls(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("boss", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("work", "work", map[string]any{"input": "do two things"}), fixture.TextTurn("I saw the worker fail")),
		Tools:  []exagentv1.ToolSpec{fixture.AgentTool("work", "worker")},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		Limits: exagentv1.LimitsSpec{MaxToolCalls: new(int32(2))},
	})
	h.createAgent("worker", exagentv1.AgentSpec{
		Model: fixture.Scripted(fixture.CallTurn("one", "poke", map[string]any{"n": 1}), fixture.CallTurn("two", "poke", map[string]any{"n": 2}),
			fixture.TextTurn("both done")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("poke", ts.url("/poke"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("boss-1", "boss")
	done := h.waitPhase("boss-1", exagentv1.PhaseSucceeded)
	child := h.get(h.childOf("boss-1", "work"))
	if child.Status.Phase != exagentv1.PhaseFailed || child.Status.Reason != exagentv1.ReasonLimitExceeded {
		t.Errorf("child = %s (%s: %s), want Failed LimitExceeded", child.Status.Phase, child.Status.Reason, child.Status.Message)
	}
	if m := child.Spec.Delegation.Limits.MaxToolCalls; m == nil || *m != 1 {
		t.Errorf("child's delegated maxToolCalls = %v, want 1", m)
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("effects = %d, want 1 (the second call is past the limit)", got)
	}
	if !historyContains(done, exagentv1.ReasonChildRunFailed) || !historyContains(done, "maxToolCalls") {
		t.Errorf("the root's model did not see why the child failed: %+v", done.Status.History)
	}
	if l := done.Status.Ledger; l.ToolCalls != 2 {
		t.Errorf("root tool calls = %d, want 2 (its own and the child's)", l.ToolCalls)
	}
}

// TestDelegationMaxDepth: an Agent that delegates to itself stops at
// limits.maxDepth: the deepest run's call fails with MaxDepthExceeded,
// its model goes on, and every run up the tree succeeds.
func TestDelegationMaxDepth(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	h.createAgent("narcissus", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("again", "again", map[string]any{"input": "go deeper"}), fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{fixture.AgentTool("again", "narcissus")},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		Limits: exagentv1.LimitsSpec{MaxDepth: new(int32(2))},
	})
	h.createRun("echo", "narcissus")
	h.waitPhase("echo", exagentv1.PhaseSucceeded)
	runs := h.treeRuns("echo")
	if len(runs) != 2 {
		t.Fatalf("tree has %d runs below the root, want 2 (maxDepth 2)", len(runs))
	}
	deepest := h.get(h.childOf(h.childOf("echo", "again"), "again"))
	if deepest.Status.Phase != exagentv1.PhaseSucceeded || !historyContains(deepest, exagentv1.ReasonMaxDepthExceeded) {
		t.Errorf("deepest run %s: want Succeeded having seen MaxDepthExceeded: %+v", deepest.Status.Phase, deepest.Status.History)
	}
}

// TestDelegationCancelPausedTree: cancelling the root while the grandchild
// waits for approval cancels the whole tree; nothing runs.
func TestDelegationCancelPausedTree(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.tree(ts)
	child, grandchild := h.pausedTree("triage-7")
	h.decide(alice, h.decision("triage-7", "stop").Cancel().Reason("wrong incident"))
	if d := h.waitDecision("triage-7-stop"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("cancel = %s (%s)", d.Status.Phase, d.Status.Message)
	}
	for _, name := range []string{"triage-7", child, grandchild} {
		run := h.waitPhase(name, exagentv1.PhaseCancelled)
		if run.Status.PendingApprovals != 0 {
			t.Errorf("run %s still has %d pending approvals", name, run.Status.PendingApprovals)
		}
		noUncertain(t, run)
	}
	if r := h.get(child); r.Status.Reason != exagentv1.ReasonParentEnded {
		t.Errorf("child reason = %s, want ParentEnded", r.Status.Reason)
	}
	if len(ts.journal()) != 0 {
		t.Errorf("effects after the cancel: %+v", ts.journal())
	}
}

// TestDelegationCancelInFlight: cancelling the root while the child's tool
// call is in flight cancels the child as any cancel does: the call, whose
// effect may still happen, is Uncertain in the Cancelled child; the root's
// delegation call is closed as failed, never Uncertain. Deleting the root
// then deletes the tree.
func TestDelegationCancelInFlight(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	sent := make(chan struct{})
	var once sync.Once
	ts.respond = func(_ http.ResponseWriter, r *http.Request, _ []byte) {
		once.Do(func() { close(sent) })
		<-r.Context().Done() // sent, never answered
	}
	h.startManager(controllers.Options{})
	h.createAgent("lead", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("hand", "hand", map[string]any{"input": "call the slow API"}), fixture.TextTurn("x")),
		Tools:  []exagentv1.ToolSpec{fixture.AgentTool("hand", "slow")},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createAgent("slow", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("call", "call", map[string]any{}), fixture.TextTurn("y")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("call", ts.url("/slow"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("lead-1", "lead")
	<-sent
	h.decide(alice, h.decision("lead-1", "stop").Cancel())
	if d := h.waitDecision("lead-1-stop"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("cancel = %s (%s)", d.Status.Phase, d.Status.Message)
	}
	child := h.childOf("lead-1", "hand")
	c := h.waitPhase(child, exagentv1.PhaseCancelled)
	if call := c.Status.Call("call"); call == nil || call.State != exagentv1.CallUncertain {
		t.Errorf("child's call = %+v, want Uncertain", call)
	}
	root := h.waitPhase("lead-1", exagentv1.PhaseCancelled)
	if call := root.Status.Call("hand"); call == nil || call.State != exagentv1.CallFailed {
		t.Errorf("root's delegation call = %+v, want Failed", call)
	}

	if err := h.c.Delete(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return len(h.treeRuns("lead-1")) == 0 }) {
		t.Errorf("the tree outlived its root: %d runs left", len(h.treeRuns("lead-1")))
	}
}

// TestDelegationCrashWindows kills the manager between the child's creation
// and the parent's commit that records it, and between a child's end and
// the parent's commit of its outcome and usage: a new manager finds the
// same child (no duplicate) and charges the usage once.
func TestDelegationCrashWindows(t *testing.T) {
	tests := map[string]struct {
		hooks func(root string, kill func()) controllers.Hooks
	}{
		"killed after the child's creation, before the parent's commit": {
			hooks: func(root string, kill func()) controllers.Hooks {
				return controllers.Hooks{AfterChildCreated: func(ctx context.Context, run types.NamespacedName, _ string) {
					if run.Name == root {
						killJob(ctx, kill)
					}
				}}
			},
		},
		"killed after the child's end, before the parent's ledger update": {
			hooks: func(root string, kill func()) controllers.Hooks {
				return controllers.Hooks{BeforeChildOutcomeCommit: func(_ context.Context, run types.NamespacedName) {
					if run.Name == root {
						kill()
					}
				}}
			},
		},
	}
	h := newHarness(t)
	ts := newToolServer(t)
	h.createAgent("planner", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("go", "go", map[string]any{"input": "poke once"}), fixture.TextTurn("planned")),
		Tools:  []exagentv1.ToolSpec{fixture.AgentTool("go", "poker")},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createAgent("poker", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("poke", "poke", map[string]any{}), fixture.TextTurn("poked")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("poke", ts.url("/poke"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	i := 0
	for name, tc := range tests {
		i++
		t.Run(name, func(t *testing.T) {
			sub := &harness{t: t, ns: h.ns, c: h.c}
			root := "plan-" + string(rune('a'+i))
			var once sync.Once
			killed := make(chan struct{})
			first := sub.startManagerWith(controllers.Options{}, func(k func()) controllers.Hooks {
				return tc.hooks(root, func() { once.Do(func() { k(); close(killed) }) })
			})
			t.Cleanup(first.stop)
			before := len(ts.journal())
			sub.createRun(root, "planner", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "5s"; r.ActiveTimeLimit = exagentv1.Never })
			<-killed
			first.stop()
			sub.startManager(controllers.Options{})
			done := sub.waitPhase(root, exagentv1.PhaseSucceeded)
			if runs := sub.treeRuns(root); len(runs) != 1 {
				t.Errorf("tree has %d children, want exactly 1", len(runs))
			}
			if got := len(ts.journal()) - before; got != 1 {
				t.Errorf("effects = %d, want 1", got)
			}
			child := sub.get(sub.childOf(root, "go"))
			want := child.Status.Ledger.Requests + 2 // the root's own two requests
			if done.Status.Ledger.Requests != want || done.Status.Ledger.ToolCalls != 2 {
				t.Errorf("root ledger = %d requests, %d tool calls; want %d and 2 (the child's usage once)",
					done.Status.Ledger.Requests, done.Status.Ledger.ToolCalls, want)
			}
			if ch := done.Status.Children; len(ch) != 1 || !ch[0].Charged {
				t.Errorf("root children = %+v, want one, charged", ch)
			}
		})
	}
}
