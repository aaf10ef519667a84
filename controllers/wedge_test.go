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
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// No value wedges a run (issue 19, item 6): a value is stored in a form
// that fits a segment, and a commit the apiserver refuses for good ends the
// run instead of being retried — and its lease retaken — for ever.

// readOnce is an Agent that calls tool "read" once, then answers "done".
func readOnce(url string) exagentv1.AgentSpec {
	return exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("c1", "read", map[string]any{"amount": 1}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("read", url)},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	}
}

// TestEscapeHeavyResultDoesNotWedge: an http tool on 127.0.0.1 answers
// 64 KiB of control characters — 6 bytes each once escaped, far more than a
// segment holds as JSON text. The run proceeds: the result is sealed in a
// form that fits (base64), the transcript reads back whole, and the run
// took a handful of status writes, none refused.
func TestEscapeHeavyResultDoesNotWedge(t *testing.T) {
	h := newHarness(t)
	body := strings.Repeat("\x01", 64<<10)
	ts := newToolServer(t)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte(body)) }
	m := h.startManager(controllers.Options{})
	h.createAgent("reader", readOnce(ts.url("/read")))
	h.createRun("r1", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRun("r1", "ended", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	msgs, chain := transcriptOf(t, run)
	var result string
	for _, msg := range msgs {
		if msg.Role == exagentv1.RoleTool {
			result = msg.Content
		}
	}
	if result != body {
		t.Fatalf("the tool result read back is %d bytes, want the %d the tool sent", len(result), len(body))
	}
	base64 := false
	for _, s := range chain {
		for _, v := range s.Spec.Values {
			base64 = base64 || v.Encoding == exagentv1.ValueBase64
		}
	}
	if !base64 {
		t.Error("the escape-heavy result was not sealed base64")
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("the tool was called %d times, want once", got)
	}
	// A run of one tool call and two model turns: claim, intents, outcomes
	// and the end — a retry loop would be many more.
	if w, refused := m.ctrls.Store.Writes(), m.ctrls.Store.Refused(); w > 12 || refused != 0 {
		t.Errorf("%d status writes, %d refused: want a handful and none refused", w, refused)
	}
}

// TestRefusedStatusEndsTheRun: the commit that records a tool's outcome is
// one the apiserver refuses as invalid (a test hook makes the status break
// the CRD's bounds whenever it carries that result). The run ends Failed,
// StatusRejected, after one refusal: the call's outcome is journaled
// (Succeeded, the result replaced by a note), the tool ran once, and the
// owner does not retry the write or retake its lease.
func TestRefusedStatusEndsTheRun(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte("poison")) }
	var mu sync.Mutex
	poisoned := 0
	m := h.startManager(controllers.Options{Hooks: controllers.Hooks{
		BeforeStatusWrite: func(_ context.Context, _ types.NamespacedName, st *exagentv1.AgentRunStatus) {
			for _, c := range st.Calls {
				if c.Outcome != nil && c.Outcome.Result == "poison" {
					mu.Lock()
					poisoned++
					mu.Unlock()
					st.Reason = strings.Repeat("x", 200) // maxLength 128: refused (422)
				}
			}
		},
	}})
	h.createAgent("reader", readOnce(ts.url("/read")))
	h.createRun("r1", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRun("r1", "ended", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseFailed || run.Status.Reason != exagentv1.ReasonStatusRejected ||
		!strings.Contains(run.Status.Message, "refused the run's next status as invalid") {
		t.Fatalf("run %s %s: %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	if len(run.Status.Calls) != 1 {
		t.Fatalf("%d calls journaled", len(run.Status.Calls))
	}
	c := run.Status.Calls[0]
	if c.State != exagentv1.CallSucceeded || c.Outcome == nil || !strings.Contains(c.Outcome.Result, "result not stored") {
		t.Fatalf("call %s %+v: want Succeeded with a note for its result", c.State, c.Outcome)
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("the tool was called %d times, want once", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if refused := m.ctrls.Store.Refused(); refused != 1 || poisoned != 1 {
		t.Errorf("%d writes refused (%d poisoned), want exactly one: no retry loop", refused, poisoned)
	}
	h.waitEvents("r1", "RunFailed")
}

// fatDecider is alice as an authenticator may present her: 64 groups of
// 500 characters, the most a decision's actor may carry. Each receipt of
// hers takes about 33 KiB of the run's status.
func fatDecider() exagentv1.Actor {
	a := users[alice].actor
	a.Groups = append([]string(nil), a.Groups...)
	for i := len(a.Groups); i < 64; i++ {
		a.Groups = append(a.Groups, fmt.Sprintf("team-%02d-", i)+strings.Repeat("g", 492))
	}
	return a
}

// TestManyDecisionsStayHot: forty approvals over a long run, each by a
// decider whose receipt takes ~33 KiB: no decision is rejected
// StatusTooLarge (receipts of past revisions are sealed), the run
// Succeeds, and a repeat of the first operation — its receipt sealed long
// ago — is Applied with that receipt.
func TestManyDecisionsStayHot(t *testing.T) {
	const approvals = 40
	h := newHarness(t)
	ts := newToolServer(t)
	var script []exagentv1.ScriptTurn
	for i := range approvals {
		script = append(script, fixture.CallTurn(fmt.Sprintf("p%d", i), "pay", map[string]any{"amount": i}))
	}
	script = append(script, fixture.TextTurn("done"))
	h.createAgent("payments", exagentv1.AgentSpec{
		Model:  fixture.Scripted(script...),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy: fixture.AskPolicy("pay"),
		Limits: exagentv1.LimitsSpec{MaxSteps: ptrTo(int32(approvals + 5))},
	})
	sizes := watchStatusSizes(t, h.ns)
	h.startManager(controllers.Options{})
	h.createRun("long", "payments", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	decider := fatDecider()
	decide := func(name, op string, a exagentv1.Approval) *exagentv1.ApprovalDecision {
		d := &exagentv1.ApprovalDecision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
			Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: "long"},
				Decision: exagentv1.DecisionApprove, ApprovalID: a.ID, PayloadHash: a.PayloadHash, Revision: a.Revision,
				OperationID: op, Reason: "ok", Actor: &decider}}
		if err := users[alice].client.Create(context.Background(), d); err != nil {
			t.Fatalf("creating decision %s: %v", name, err)
		}
		return h.waitDecision(name)
	}
	var first exagentv1.Approval
	var firstReceipt *exagentv1.Receipt
	for i := range approvals {
		run := h.waitRun("long", fmt.Sprintf("approval %d", i), func(r *exagentv1.AgentRun) bool {
			return r.Status.Phase == exagentv1.PhaseAwaitingApproval && r.Status.Revision == int64(i+1) || r.Status.Phase.IsTerminal()
		})
		if run.Status.Phase != exagentv1.PhaseAwaitingApproval {
			t.Fatalf("approval %d: run %s %s: %s", i, run.Status.Phase, run.Status.Reason, run.Status.Message)
		}
		a := pendingApproval(t, run)
		d := decide(fmt.Sprintf("approve-%d", i), fmt.Sprintf("op-%d", i), a)
		if d.Status.Phase != exagentv1.DecisionApplied {
			t.Fatalf("decision %d: %s: %s", i, d.Status.Phase, d.Status.Message)
		}
		if i == 0 {
			first, firstReceipt = a, d.Status.Receipt
		}
	}
	run := h.waitRun("long", "ended", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s %s: %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	if run.Status.Transcript == nil || run.Status.Transcript.Receipts < approvals-2 || len(run.Status.Receipts) > 2 {
		t.Fatalf("%d receipts hot, the head counts %v sealed", len(run.Status.Receipts), run.Status.Transcript)
	}
	if largest, writes := sizes.of("long"); largest > 256<<10 {
		t.Errorf("a status write took %d bytes (%d writes): the receipts are not leaving the hot status", largest, writes)
	}
	again := decide("approve-0-again", "op-0", first)
	if again.Status.Phase != exagentv1.DecisionApplied || again.Status.Receipt == nil ||
		again.Status.Receipt.OperationID != "op-0" || !again.Status.Receipt.AppliedAt.Equal(firstReceipt.AppliedAt) {
		t.Fatalf("the repeated decision: %s %q, receipt %+v; want Applied with the first one's receipt",
			again.Status.Phase, again.Status.Message, again.Status.Receipt)
	}
}

// TestNotifyManyApprovals: 24 approvals pending at once and 3 sinks — 72
// ApprovalRequested notifications, then 72 ApprovalExpiring, more than the
// run's journal holds. Each sink receives every notification (none
// pending is dropped), and each ApprovalExpiring exactly once (no
// re-stamping of a record that left the journal).
func TestNotifyManyApprovals(t *testing.T) {
	const approvals = 24
	h := newHarness(t)
	ts := newToolServer(t)
	sinks := []*sink{newSink(t), newSink(t), newSink(t)}
	turn := exagentv1.ScriptTurn{}
	for i := range approvals {
		turn.ToolCalls = append(turn.ToolCalls, exagentv1.ScriptToolCall{ID: fmt.Sprintf("p%02d", i), Name: "pay",
			Arguments: fixture.Raw(map[string]any{"amount": i})})
	}
	spec := exagentv1.AgentSpec{
		Model:  fixture.Scripted(turn, fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy: fixture.AskPolicy("pay"),
	}
	for i, s := range sinks {
		spec.Notify = append(spec.Notify, exagentv1.NotifySink{Name: fmt.Sprintf("sink-%d", i), URL: s.srv.URL})
	}
	h.startManager(controllers.Options{})
	h.createAgent("payments", spec)
	// Warned a quarter of the timeout (5s) before it runs out.
	h.createRun("r1", "payments", func(r *exagentv1.AgentRunSpec) { r.ApprovalTimeout = "20s" })
	for _, kind := range []string{"approval-requested", "approval-expiring"} {
		for i, s := range sinks {
			s.waitFor(t, fmt.Sprintf("sink-%d: %d× %s", i, approvals, kind), approvals, ofType("io.exagent.run."+kind))
		}
	}
	h.waitPhase("r1", exagentv1.PhaseExpired)
	for i, s := range sinks {
		s.waitFor(t, fmt.Sprintf("sink-%d: run-ended", i), 1, ofType("io.exagent.run.run-ended"))
	}
	for i, s := range sinks {
		for _, kind := range []string{"approval-requested", "approval-expiring"} {
			seen := map[string]int{}
			for _, ev := range s.cloudEvents(t, "io.exagent.run."+kind) {
				seen[ev.Subject]++
			}
			if len(seen) != approvals {
				t.Errorf("sink-%d received %s for %d approvals, want %d", i, kind, len(seen), approvals)
			}
			for subject, n := range seen {
				if n != 1 {
					t.Errorf("sink-%d received %s of %s %d times, want once", i, kind, subject, n)
				}
			}
		}
	}
}

// TestSealValueBytesCountedByTheEngine: a manager whose --seal-value-bytes
// is 64 KiB keeps 62 KiB results in the status. The engine's size checks
// count them there — its threshold is the store's — so it keeps the status
// within its budget itself (shortening results, or ending the run before
// it passes it) and the apiserver never has to refuse a write. Counting by
// the default threshold, it would take those results for 200-byte refs and
// commit, one outcome after another, a status etcd refuses.
func TestSealValueBytesCountedByTheEngine(t *testing.T) {
	const calls, size = 30, 62 << 10
	h := newHarness(t)
	result := strings.Repeat("a", size)
	key := types.NamespacedName{Namespace: h.ns, Name: "r1"}
	// The tool answers one call at a time, each once the previous answer is
	// committed: every outcome is its own write, as when a batch's calls
	// take different times.
	var mu sync.Mutex
	answered := 0
	ts := newToolServer(t)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		eventually(func() bool {
			var run exagentv1.AgentRun
			if err := h.c.Get(context.Background(), key, &run); err != nil {
				return false
			}
			recorded := 0
			for _, c := range run.Status.Calls {
				if c.Outcome != nil {
					recorded++
				}
			}
			return recorded >= answered || run.Status.Phase.IsTerminal()
		})
		answered++
		_, _ = w.Write([]byte(result))
	}
	turn := exagentv1.ScriptTurn{}
	for i := range calls {
		turn.ToolCalls = append(turn.ToolCalls, exagentv1.ScriptToolCall{ID: fmt.Sprintf("r%02d", i), Name: "read",
			Arguments: fixture.Raw(map[string]any{"amount": i})})
	}
	tool := fixture.HTTPTool("read", ts.url("/read"))
	tool.HTTP.Timeout = "5m" // the last call waits for every other answer to be committed
	sizes := watchStatusSizes(t, h.ns)
	m := h.startManager(controllers.Options{SealValueBytes: 64 << 10})
	h.createAgent("reader", exagentv1.AgentSpec{
		Model:  fixture.Scripted(turn, fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{tool},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("r1", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRunFor("r1", "ended", longWait, func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	largest, writes := sizes.of("r1")
	if refused := m.ctrls.Store.Refused(); refused != 0 || strings.Contains(run.Status.Message, "apiserver") {
		t.Fatalf("%d writes refused (largest status %d bytes over %d writes); run %s %s: %s",
			refused, largest, writes, run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	t.Logf("run %s %s: %.200s; largest status %d bytes over %d writes", run.Status.Phase, run.Status.Reason, run.Status.Message, largest, writes)
}
