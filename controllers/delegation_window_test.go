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
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// The escape window of a delegation (issue 19, item 5): a child whose
// Create is in flight — or done, before the parent's commit records it —
// when the parent is cancelled, ends, or loses its owner and is then
// cancelled, denied after a re-ask, or has the tool removed. Each test
// ends with the child Cancelled by its parent, no tool of the child ever
// executed (its model requests are held until it loses its claim), and
// whatever the child used charged to the parent.

// windowAgents creates lead, whose tool hand delegates to worker, and
// worker, which pokes the tool server once and answers.
func windowAgents(h *harness, ts *toolServer, policy exagentv1.PolicySpec) {
	h.t.Helper()
	h.createAgent("lead", exagentv1.AgentSpec{
		Instructions: "You lead.",
		Model:        fixture.Scripted(fixture.CallTurn("hand", "hand", map[string]any{"input": "poke the service"}), fixture.TextTurn("lead done")),
		Tools:        []exagentv1.ToolSpec{fixture.AgentTool("hand", "worker"), fixture.HTTPTool("note", ts.url("/note"))},
		Policy:       policy,
	})
	h.createAgent("worker", exagentv1.AgentSpec{
		Instructions: "You work.",
		Model:        fixture.Scripted(fixture.CallTurn("poke", "poke", map[string]any{}), fixture.TextTurn("worker done")),
		Tools:        []exagentv1.ToolSpec{fixture.HTTPTool("poke", ts.url("/poke"))},
		Policy:       exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
}

var allowAll = exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}

// holdModels is a BeforeModelRequest hook that holds every model request
// of a run other than root until the run loses its claim (the job's
// context ends) or the test ends: a child held there executes nothing
// unless it is let go.
type holdModels struct {
	root string
	once sync.Once
	done chan struct{}
}

func newHoldModels(t *testing.T, root string) *holdModels {
	hm := &holdModels{root: root, done: make(chan struct{})}
	t.Cleanup(hm.release) // before the managers stop (cleanups run last first)
	return hm
}

func (hm *holdModels) hook(ctx context.Context, run types.NamespacedName) {
	if run.Name == hm.root {
		return
	}
	select {
	case <-ctx.Done():
	case <-hm.done:
	}
}

func (hm *holdModels) release() { hm.once.Do(func() { close(hm.done) }) }

// gate lets a hook signal that it was reached and wait until the test lets
// it go on; it never waits past the test.
type gate struct {
	reached chan string
	open    chan struct{}
	once    sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{reached: make(chan string, 1), open: make(chan struct{})}
	t.Cleanup(g.let)
	return g
}

// wait is the hook's side: signal (once), then wait for the test. The
// hook's context is not heeded: what the gate holds is already sent.
func (g *gate) wait(what string) {
	select {
	case g.reached <- what:
	default:
	}
	<-g.open
}

func (g *gate) let() { g.once.Do(func() { close(g.open) }) }

// reachedIn waits for the hook to be reached.
func (g *gate) reachedIn(t *testing.T) string {
	t.Helper()
	select {
	case what := <-g.reached:
		return what
	case <-time.After(waitTimeout):
		t.Fatal("the hook was never reached")
		return ""
	}
}

// cancelRun cancels run as alice and waits until it is Cancelled.
func (h *harness) cancelRun(run string) {
	h.t.Helper()
	h.decide(alice, h.decision(run, "stop").Cancel().Reason("not now"))
	if d := h.waitDecision(run + "-stop"); d.Status.Phase != exagentv1.DecisionApplied {
		h.t.Fatalf("cancel = %s (%s)", d.Status.Phase, d.Status.Message)
	}
	h.waitPhase(run, exagentv1.PhaseCancelled)
}

// end is how a child may end: its phase and reason.
type end struct {
	phase  exagentv1.RunPhase
	reason string
}

var (
	endedByParent = end{exagentv1.PhaseCancelled, exagentv1.ReasonParentEnded}
	withdrawnBy   = end{exagentv1.PhaseCancelled, exagentv1.ReasonDelegationWithdrawn}
)

// assertWithdrawn: the child of root's call hand ended as one of want, no
// tool of it ever ran, root's entry for it is settled, and what the child
// used is charged to root.
func assertWithdrawn(t *testing.T, h *harness, ts *toolServer, root, child string, want ...end) {
	t.Helper()
	c := h.waitRun(child, "Cancelled by its parent", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase.IsTerminal()
	})
	ok := false
	for _, w := range want {
		ok = ok || c.Status.Phase == w.phase && c.Status.Reason == w.reason
	}
	if !ok {
		t.Errorf("child %s = %s (%s: %s), want one of %+v", child, c.Status.Phase, c.Status.Reason, c.Status.Message, want)
	}
	r := h.waitRun(root, "its child's entry settled", func(r *exagentv1.AgentRun) bool {
		return len(r.Status.Children) == 1 && r.Status.Children[0].Charged
	})
	if e := r.Status.Children[0]; e.Name != child {
		t.Errorf("root journaled child %s, want %s", e.Name, child)
	}
	if got := ts.journal(); len(got) != 0 {
		t.Errorf("tools executed: %+v, want none (the child was withdrawn before any could run)", got)
	}
	c = h.get(child)
	if l := r.Status.Ledger; l.ChildRequests != c.Status.Ledger.Requests || l.ToolCalls != 1+c.Status.Ledger.ToolCalls {
		t.Errorf("root ledger %+v: want the child's %d requests and %d tool calls charged", l, c.Status.Ledger.Requests,
			c.Status.Ledger.ToolCalls)
	}
	if call := r.Status.Call("hand"); call == nil || call.State == exagentv1.CallUncertain {
		t.Errorf("root's delegation call = %+v, want it closed (never Uncertain)", call)
	}
}

// killJob stops the manager from inside a job's hook, as a crash at that
// point would: it returns only once the job's own context has ended, so
// the job files nothing and its result is never committed. (The manager's
// stop reaches the jobs' context a moment after kill returns; returning at
// once let a loaded machine commit the result in between.)
func killJob(job context.Context, kill func()) {
	kill()
	<-job.Done()
}

// killAfterCreate starts a manager killed once root's child exists and
// before root's commit records it, and waits for that. The child's model
// requests are held there too (hm), should it get that far before the kill.
func killAfterCreate(t *testing.T, h *harness, root string, hm *holdModels) {
	t.Helper()
	var once sync.Once
	killed := make(chan struct{})
	first := h.startManagerWith(controllers.Options{}, func(kill func()) controllers.Hooks {
		return controllers.Hooks{AfterChildCreated: func(ctx context.Context, run types.NamespacedName, _ string) {
			if run.Name == root {
				once.Do(func() { killJob(ctx, kill); close(killed) })
			}
		}, BeforeModelRequest: hm.hook}
	})
	t.Cleanup(first.stop)
	select {
	case <-killed:
	case <-time.After(waitTimeout):
		t.Fatal("the child was never created")
	}
	first.stop()
}

// startHolding starts a manager whose children's model requests are held
// (holdModels) and whose recovery of a dead owner's run has no grace.
func startHolding(t *testing.T, h *harness, hm *holdModels) {
	t.Helper()
	m := h.startManagerWith(controllers.Options{LeaseSkewGrace: -1}, func(func()) controllers.Hooks {
		return controllers.Hooks{BeforeModelRequest: hm.hook}
	})
	t.Cleanup(m.stop)
}

// TestDelegationWindowCancelDuringCreate: the parent is cancelled while its
// child's Create is on the wire; the Create lands after the cancel. The
// child ends itself before any IO (its parent ended), and the parent's
// entry is settled.
func TestDelegationWindowCancelDuringCreate(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	windowAgents(h, ts, allowAll)
	g := newGate(t)
	hm := newHoldModels(t, "win-1")
	m := h.startManagerWith(controllers.Options{}, func(func()) controllers.Hooks {
		return controllers.Hooks{
			BeforeChildCreate: func(_ context.Context, run types.NamespacedName, child string) {
				if run.Name == "win-1" {
					g.wait(child)
				}
			},
			BeforeModelRequest: hm.hook,
		}
	})
	t.Cleanup(m.stop)
	h.createRun("win-1", "lead")
	child := g.reachedIn(t)
	if child != h.childOf("win-1", "hand") {
		t.Fatalf("creating %s, want %s", child, h.childOf("win-1", "hand"))
	}
	h.cancelRun("win-1")
	g.let()
	assertWithdrawn(t, h, ts, "win-1", child, endedByParent)
	if c := h.get(child); c.Status.Ledger.Requests != 0 || c.Status.Attempts != 0 {
		t.Errorf("child used %+v in %d attempts, want nothing: its parent had ended before it started", c.Status.Ledger, c.Status.Attempts)
	}
}

// TestDelegationWindowCancelBeforeRecord: the child exists but the
// parent's commit that records it has not happened when the parent is
// cancelled. The parent ends the child it journaled.
func TestDelegationWindowCancelBeforeRecord(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	windowAgents(h, ts, allowAll)
	g := newGate(t)
	hm := newHoldModels(t, "win-2")
	m := h.startManagerWith(controllers.Options{}, func(func()) controllers.Hooks {
		return controllers.Hooks{
			AfterChildCreated: func(_ context.Context, run types.NamespacedName, child string) {
				if run.Name == "win-2" {
					g.wait(child)
				}
			},
			BeforeModelRequest: hm.hook,
		}
	})
	t.Cleanup(m.stop)
	h.createRun("win-2", "lead")
	child := g.reachedIn(t)
	h.cancelRun("win-2")
	g.let()
	assertWithdrawn(t, h, ts, "win-2", child, endedByParent)
}

// TestDelegationWindowCrashThenCancel: the manager dies after the child's
// Create and before the parent's commit; the parent, whose dead owner's
// lease is still valid, is then cancelled.
func TestDelegationWindowCrashThenCancel(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	windowAgents(h, ts, allowAll)
	h.createRun("win-3", "lead", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "60s" })
	hm := newHoldModels(t, "win-3")
	killAfterCreate(t, h, "win-3", hm)
	startHolding(t, h, hm)
	h.cancelRun("win-3")
	assertWithdrawn(t, h, ts, "win-3", h.childOf("win-3", "hand"), endedByParent)
}

// TestDelegationWindowDeadline: the manager dies after the child's Create;
// the parent's deadline passes before its dead owner's lease does, so the
// recovered parent ends Expired without ever recording the child. The
// child shares the deadline and ends at it; what it used is charged to
// the parent all the same.
func TestDelegationWindowDeadline(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	windowAgents(h, ts, allowAll)
	deadline := time.Now().Add(6 * time.Second)
	h.createRun("win-4", "lead", func(r *exagentv1.AgentRunSpec) {
		r.LeaseDuration = "8s"
		r.ActiveTimeLimit = exagentv1.Never
		d := metav1.NewTime(deadline)
		r.Deadline = &d
	})
	hm := newHoldModels(t, "win-4")
	killAfterCreate(t, h, "win-4", hm)
	startHolding(t, h, hm)
	r := h.waitRun("win-4", "Expired", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if r.Status.Phase != exagentv1.PhaseExpired {
		t.Fatalf("root = %s (%s), want Expired", r.Status.Phase, r.Status.Message)
	}
	// The child has the parent's deadline: it ends at it too, or is ended
	// by its parent first (held in its first model request, it ran no
	// tool); the parent, which never recorded it, settles it either way
	// and is charged what it used.
	assertWithdrawn(t, h, ts, "win-4", h.childOf("win-4", "hand"),
		end{exagentv1.PhaseExpired, exagentv1.ReasonDeadlineExceeded}, endedByParent)
}

// TestDelegationWindowDenyAfterReAsk: the delegation was approved and its
// child created when the manager died; the parent's policy changed
// meanwhile, so the recovered parent asks again, and alice denies
// (onDeny Continue: the parent goes on). The child is withdrawn at the
// re-ask, and the parent's model is told of the denial.
func TestDelegationWindowDenyAfterReAsk(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	policy := fixture.AskPolicy("hand")
	policy.OnDeny = exagentv1.OnDenyContinue
	windowAgents(h, ts, policy)
	h.createRun("win-5", "lead", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "3s"; r.ActiveTimeLimit = exagentv1.Never })
	hm := newHoldModels(t, "win-5")
	var once sync.Once
	killed := make(chan struct{})
	first := h.startManagerWith(controllers.Options{}, func(kill func()) controllers.Hooks {
		return controllers.Hooks{AfterChildCreated: func(ctx context.Context, run types.NamespacedName, _ string) {
			if run.Name == "win-5" {
				once.Do(func() { killJob(ctx, kill); close(killed) })
			}
		}, BeforeModelRequest: hm.hook}
	})
	t.Cleanup(first.stop)
	paused := h.waitPhase("win-5", exagentv1.PhaseAwaitingApproval)
	old := pendingApproval(t, paused)
	h.approve(paused, "yes")
	select {
	case <-killed:
	case <-time.After(waitTimeout):
		t.Fatal("the child was never created")
	}
	first.stop()
	agent := &exagentv1.Agent{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "lead"}, agent); err != nil {
		t.Fatal(err)
	}
	agent.Spec.Policy.Rules = append(agent.Spec.Policy.Rules, exagentv1.PolicyRule{Name: "ask-notes", Tools: []string{"note"},
		Action: exagentv1.PolicyAsk})
	if err := h.c.Update(context.Background(), agent); err != nil {
		t.Fatal(err)
	}
	startHolding(t, h, hm)
	// Generous: the stopped manager's lease must lapse before another
	// claims the parent, and this machine may be loaded.
	again := h.waitRunFor("win-5", "asked again", 2*time.Minute, func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseAwaitingApproval && len(r.Status.Pending()) == 1 && r.Status.Pending()[0].ID != old.ID
	})
	a := pendingApproval(t, again)
	h.decide(alice, h.decision("win-5", "no").Deny(a).Reason("not after that change"))
	done := h.waitPhase("win-5", exagentv1.PhaseSucceeded)
	if !historyContains(done, "Denied") {
		t.Errorf("the parent's model was not told of the denial: %+v", done.Status.History)
	}
	assertWithdrawn(t, h, ts, "win-5", h.childOf("win-5", "hand"), withdrawnBy)
}

// TestDelegationWindowToolRemoved: the child was created when the manager
// died, and the delegation tool was then removed from the parent's Agent.
// The recovered parent cannot go on (its definition changed), and the
// call can never be begun again: the child is withdrawn.
func TestDelegationWindowToolRemoved(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	windowAgents(h, ts, allowAll)
	h.createRun("win-6", "lead", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "3s"; r.ActiveTimeLimit = exagentv1.Never })
	hm := newHoldModels(t, "win-6")
	killAfterCreate(t, h, "win-6", hm)
	agent := &exagentv1.Agent{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "lead"}, agent); err != nil {
		t.Fatal(err)
	}
	agent.Spec.Tools = agent.Spec.Tools[1:] // hand is gone, note stays
	if err := h.c.Update(context.Background(), agent); err != nil {
		t.Fatal(err)
	}
	startHolding(t, h, hm)
	assertWithdrawn(t, h, ts, "win-6", h.childOf("win-6", "hand"), withdrawnBy)
	if r := h.get("win-6"); r.Status.Phase.IsTerminal() || r.Status.Claim != nil {
		t.Errorf("root = %s, claim %v: want it waiting (not claimed) for its Agent to be fixed", r.Status.Phase, r.Status.Claim)
	}
}
