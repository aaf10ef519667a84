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
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/store"
)

// createConversation creates a Conversation of agent in h's namespace.
func (h *harness) createConversation(name, agent string, mutate ...func(*exagentv1.ConversationSpec)) {
	h.t.Helper()
	c := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: agent}}}
	for _, m := range mutate {
		m(&c.Spec)
	}
	if err := h.c.Create(context.Background(), c); err != nil {
		h.t.Fatalf("creating conversation %s: %v", name, err)
	}
}

func turnOf(conv string) func(*exagentv1.AgentRunSpec) {
	return func(s *exagentv1.AgentRunSpec) { s.ConversationRef = &exagentv1.ConversationRef{Name: conv} }
}

// createTurn creates a turn of conv with input, stamped as admission
// would (no webhook in this envtest): the Conversation as its owner.
func (h *harness) createTurn(name, agent, conv, input string) {
	h.t.Helper()
	c := &exagentv1.Conversation{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: conv}, c); err != nil {
		h.t.Fatal(err)
	}
	r := fixture.MakeRun(name, h.ns).Agent(agent).Input(input).Obj()
	r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: conv}
	r.OwnerReferences = []metav1.OwnerReference{exagentv1.ConversationOwnerReference(c)}
	if err := h.c.Create(context.Background(), r); err != nil {
		h.t.Fatalf("creating turn %s: %v", name, err)
	}
}

// waitingForTurn waits until run is Queued, reason WaitingForTurn, naming
// open — and checks it never started: no claim, no attempt, no request.
func (h *harness) waitingForTurn(run, open string) {
	h.t.Helper()
	r := h.waitRun(run, "waiting for turn "+open, func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseQueued && r.Status.Reason == exagentv1.ReasonWaitingForTurn &&
			strings.Contains(r.Status.Message, open)
	})
	if r.Status.Claim != nil || r.Status.Attempts != 0 || r.Status.Ledger.Requests != 0 {
		h.t.Fatalf("turn %s waits for %s but started: claim %+v, attempts %d, requests %d",
			run, open, r.Status.Claim, r.Status.Attempts, r.Status.Ledger.Requests)
	}
}

// TestConversationTurnsQueue: three turns applied at once, the first
// pauses for approval — the second and third stay Queued (WaitingForTurn),
// with no claim and no model request, while it waits; approved, the first
// ends and the second runs (and pauses), the third still waits; and so on:
// each turn's call runs once, in turn order.
func TestConversationTurnsQueue(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("pay", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("c1", "pay", map[string]any{"amount": 5}), fixture.TextTurn("paid")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy: fixture.AskPolicy("pay"),
	})
	h.createConversation("chat", "pay")
	for _, name := range []string{"chat-t1", "chat-t2", "chat-t3"} {
		h.createRun(name, "pay", turnOf("chat"), func(s *exagentv1.AgentRunSpec) { s.Input = "say " + name })
	}
	first := h.waitPhase("chat-t1", exagentv1.PhaseAwaitingApproval)
	h.waitingForTurn("chat-t2", "chat-t1")
	h.waitingForTurn("chat-t3", "chat-t1")
	h.waitConversation("chat", "turn 1 paused, two queued", func(s exagentv1.ConversationStatus) bool {
		return s.Phase == exagentv1.ConversationAwaitingApproval && s.Open == "chat-t1" && s.Queued == 2 && len(s.Turns) == 3
	})

	h.approve(first, "ok")
	h.waitPhase("chat-t1", exagentv1.PhaseSucceeded)
	second := h.waitPhase("chat-t2", exagentv1.PhaseAwaitingApproval)
	h.waitingForTurn("chat-t3", "chat-t2")

	h.approve(second, "ok")
	h.waitPhase("chat-t2", exagentv1.PhaseSucceeded)
	h.approve(h.waitPhase("chat-t3", exagentv1.PhaseAwaitingApproval), "ok")
	h.waitPhase("chat-t3", exagentv1.PhaseSucceeded)

	conv := h.waitConversation("chat", "idle after three turns", func(s exagentv1.ConversationStatus) bool {
		return s.Phase == exagentv1.ConversationIdle && s.Open == "" && s.Queued == 0 && len(s.Turns) == 3 && s.Ledger.ToolCalls == 3
	})
	for i, tr := range conv.Status.Turns {
		if want := fmt.Sprintf("chat-t%d", i+1); tr.Run != want || tr.Index != int32(i+1) || tr.Phase != exagentv1.PhaseSucceeded || tr.Participant != "pay" {
			t.Errorf("status.turns[%d] = %+v, want %s Succeeded by pay", i, tr, want)
		}
	}

	// Each turn continues the one before: turn 3's transcript is turn 1's
	// and turn 2's messages, then its own — and its journal holds only
	// its own call.
	third := h.get("chat-t3")
	if tr := third.Status.Turn; tr == nil || tr.Index != 3 || tr.After != "chat-t2" {
		t.Fatalf("turn 3's status.turn %+v, want index 3 after chat-t2", tr)
	}
	var said []string
	for _, m := range transcriptMessages(t, h, third) {
		if m.Role == exagentv1.RoleUser {
			said = append(said, m.Content)
		}
	}
	if strings.Join(said, "|") != "say chat-t1|say chat-t2|say chat-t3" {
		t.Errorf("the user messages turn 3's transcript holds: %q, want the three turns' in order", said)
	}
	if len(third.Status.Calls) != 1 {
		t.Errorf("turn 3 journals %d calls, want only its own", len(third.Status.Calls))
	}

	var runs []string
	for _, r := range ts.journal() {
		runs = append(runs, strings.TrimPrefix(r.Run, h.ns+"/"))
	}
	if strings.Join(runs, ",") != "chat-t1,chat-t2,chat-t3" {
		t.Fatalf("tool calls by turn %v, want one each, in turn order", runs)
	}
}

// TestConversationTurnHeld: a turn of a conversation that does not exist
// waits (ConversationNotFound) and starts once it is created; a suspended
// conversation holds its next turn (ConversationSuspended) until it is
// unsuspended.
func TestConversationTurnHeld(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("a", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.TextTurn("hello")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("early", "a", turnOf("later"))
	h.waitRun("early", "ConversationNotFound", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseQueued && r.Status.Reason == exagentv1.ReasonConversationNotFound
	})
	h.createConversation("later", "a", func(s *exagentv1.ConversationSpec) { s.Suspend = true })
	h.waitRun("early", "ConversationSuspended", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseQueued && r.Status.Reason == exagentv1.ReasonConversationSuspended &&
			r.Status.Attempts == 0
	})
	conv := &exagentv1.Conversation{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "later"}, conv); err != nil {
		t.Fatal(err)
	}
	conv.Spec.Suspend = false
	if err := h.c.Update(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("early", exagentv1.PhaseSucceeded)
}

// transcriptMessages is run's whole logical transcript: the messages its
// chain holds (earlier turns' included), then its status.history.
func transcriptMessages(t *testing.T, h *harness, run *exagentv1.AgentRun) []exagentv1.Message {
	t.Helper()
	segs := store.NewSegments(h.c, h.c, 0)
	chain, err := segs.Chain(context.Background(), run)
	if err != nil {
		t.Fatalf("reading the chain of %s: %v", run.Name, err)
	}
	msgs, err := segment.Transcript(chain, run.Status.History)
	if err != nil {
		t.Fatalf("the transcript of %s: %v", run.Name, err)
	}
	return msgs
}

// TestConversationSharesSealedTranscript: turns whose tool answers are
// sealed into segments (past --seal-value-bytes) continue by reference:
// each turn's head takes the turn before's chain as its base (the same
// segments, not copies: a turn's own segments are only those it sealed),
// the chain verifies across turns, and the last turn's transcript holds
// every turn's messages in order, each sealed answer whole.
func TestConversationSharesSealedTranscript(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{}) // asks before pay; answers bigResult (sealed)
	h.createConversation("big", "pay")
	var prev *exagentv1.AgentRun
	for i, name := range []string{"big-t1", "big-t2", "big-t3"} {
		if i == 2 {
			// An earlier turn deleted: its segments stay, co-owned by the
			// conversation, as later turns reference them.
			for _, seg := range segmentsOf(t, h, h.get("big-t1")) {
				if !slices.ContainsFunc(seg.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Conversation" && o.Name == "big" }) {
					t.Fatalf("segment %s of turn 1 has owners %+v, want the conversation among them", seg.Name, seg.OwnerReferences)
				}
			}
			if err := h.c.Delete(context.Background(), h.get("big-t1")); err != nil {
				t.Fatal(err)
			}
			h.waitGone("big-t1")
		}
		h.createTurn(name, "pay", "big", "turn "+name)
		h.approve(h.waitPhase(name, exagentv1.PhaseAwaitingApproval), "ok")
		run := h.waitPhase(name, exagentv1.PhaseSucceeded)
		head := run.Status.Transcript
		if head == nil || head.Segments == 0 {
			t.Fatalf("turn %s sealed nothing: %+v", name, head)
		}
		own := segmentsOf(t, h, run)
		if i == 0 {
			if head.BaseSegments != 0 {
				t.Fatalf("the first turn inherits %d segments", head.BaseSegments)
			}
		} else {
			if head.BaseSegments != prev.Status.Transcript.Segments || head.BaseHead != prev.Status.Transcript.Head {
				t.Fatalf("turn %s base %d/%s, want the turn before's chain %d/%s", name,
					head.BaseSegments, head.BaseHead, prev.Status.Transcript.Segments, prev.Status.Transcript.Head)
			}
		}
		if got, want := int32(len(own)), head.Segments-head.BaseSegments; got != want {
			t.Fatalf("turn %s has %d segments of its own, want %d (its chain of %d less the %d it took by reference)",
				name, got, want, head.Segments, head.BaseSegments)
		}
		prev = run
	}
	var said []string
	answers := 0
	for _, m := range transcriptMessages(t, h, prev) {
		switch m.Role {
		case exagentv1.RoleUser:
			said = append(said, m.Content)
		case exagentv1.RoleTool:
			if m.Content == bigResult {
				answers++
			}
		}
	}
	if strings.Join(said, "|") != "turn big-t1|turn big-t2|turn big-t3" || answers != 3 {
		t.Fatalf("the last turn's transcript: users %q and %d whole tool answers, want the three turns' in order and 3", said, answers)
	}
	if n := len(ts.journal()); n != 3 {
		t.Errorf("%d tool calls, want 3 (one per turn, none replayed)", n)
	}

	// Deleting the conversation deletes its turns, and with them every
	// segment of the conversation (the garbage collector).
	conv := &exagentv1.Conversation{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "big"}, conv); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"big-t2", "big-t3"} {
		h.waitGone(name)
	}
	if !eventually(func() bool {
		var list exagentv1.AgentRunSegmentList
		return h.c.List(context.Background(), &list, client.InNamespace(h.ns)) == nil && len(list.Items) == 0
	}) {
		t.Error("segments of the deleted conversation remain")
	}
}

// waitConversation waits until conversation name's status satisfies cond.
func (h *harness) waitConversation(name, what string, cond func(exagentv1.ConversationStatus) bool) *exagentv1.Conversation {
	h.t.Helper()
	c := &exagentv1.Conversation{}
	if !eventually(func() bool {
		return h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, c) == nil && cond(c.Status)
	}) {
		h.t.Fatalf("conversation %s: timed out waiting for %s; status %+v", name, what, c.Status)
	}
	return c
}

// TestConversationInterrupt: with doubleText Interrupt a newer turn ends
// the open one — a paused turn is Cancelled (reason Interrupted, naming
// the newer turn) and the newer turn runs, continuing the transcript with
// an answer for the call the interrupted turn never ran; a turn
// interrupted with a call in flight holds that call Uncertain and the
// queue with it, until a person resolves it — then the newer turn runs.
func TestConversationInterrupt(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived := make(chan struct{})
	var once sync.Once
	ts.mu.Lock()
	ts.respond = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if strings.HasSuffix(r.URL.Path, "/slow") {
			once.Do(func() { close(arrived) })
			<-r.Context().Done() // hangs until the client gives up
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	ts.mu.Unlock()
	h.startManager(controllers.Options{})
	h.createAgent("pay", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("c1", "pay", map[string]any{"amount": 5}), fixture.TextTurn("paid")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("pay", ts.url("/pay"))},
		Policy: fixture.AskPolicy("pay"),
	})
	slow := fixture.HTTPTool("slow", ts.url("/slow"))
	slow.HTTP.Timeout = "1h"
	h.createAgent("slow", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("s1", "slow", map[string]any{"amount": 1}), fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{slow},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	interrupt := func(s *exagentv1.ConversationSpec) { s.DoubleText = exagentv1.DoubleTextInterrupt }

	t.Run("a paused turn", func(t *testing.T) {
		h.createConversation("int", "pay", interrupt)
		h.createTurn("int-t1", "pay", "int", "pay 5")
		h.waitPhase("int-t1", exagentv1.PhaseAwaitingApproval)
		h.createTurn("int-t2", "pay", "int", "no, pay 7")
		first := h.waitRun("int-t1", "interrupted", func(r *exagentv1.AgentRun) bool { return r.Status.Phase == exagentv1.PhaseCancelled })
		if first.Status.Reason != exagentv1.ReasonInterrupted || !strings.Contains(first.Status.Message, "int-t2") {
			t.Fatalf("turn 1 %s %s %q, want Cancelled Interrupted naming int-t2", first.Status.Phase, first.Status.Reason, first.Status.Message)
		}
		h.approve(h.waitPhase("int-t2", exagentv1.PhaseAwaitingApproval), "ok")
		second := h.waitPhase("int-t2", exagentv1.PhaseSucceeded)
		var notRun bool
		for _, m := range transcriptMessages(t, h, second) {
			if m.Role == exagentv1.RoleTool && m.ToolCallID == "c1" && strings.Contains(m.Content, "not run: turn int-t1 ended") {
				notRun = true
			}
		}
		if !notRun {
			t.Error("turn 2's transcript has no answer for the call turn 1 never ran")
		}
		if n := len(ts.journal()); n != 1 {
			t.Errorf("%d calls of pay, want 1 (turn 2's; turn 1's never ran)", n)
		}
	})

	t.Run("a call in flight", func(t *testing.T) {
		h.createConversation("busy", "slow", interrupt)
		h.createTurn("busy-t1", "slow", "busy", "wait for it")
		waitClosed(t, arrived, "the slow call")
		h.createTurn("busy-t2", "slow", "busy", "never mind")
		first := h.waitRun("busy-t1", "interrupted with its call Uncertain", func(r *exagentv1.AgentRun) bool {
			return r.Status.Phase == exagentv1.PhaseCancelled && len(r.Status.UncertainCalls()) == 1
		})
		h.waitingForTurn("busy-t2", "busy-t1")
		h.waitConversation("busy", "Uncertain on turn 1", func(s exagentv1.ConversationStatus) bool {
			return s.Phase == exagentv1.ConversationUncertain && s.Open == "busy-t1"
		})
		c := first.Status.UncertainCalls()[0]
		if d := h.waitDecision(h.decide(alice, h.decision("busy-t1", "record").Resolve(c, first.Status.Revision, exagentv1.ResolveFailed, "it never reached the backend")).Name); d.Status.Phase != exagentv1.DecisionApplied {
			t.Fatalf("resolve = %s (%s)", d.Status.Phase, d.Status.Message)
		}
		h.waitRun("busy-t2", "running after the resolve", func(r *exagentv1.AgentRun) bool { return r.Status.Attempts > 0 })
	})
}

// TestConversationFiftyTurns: a 50-turn conversation keeps every turn's
// status under the 32 KiB hot budget and writes about the same segment
// bytes per turn at turn 50 as at turn 26 — the history is referenced,
// not copied — while the last turn's transcript still holds every turn's
// prompt.
func TestConversationFiftyTurns(t *testing.T) {
	const turns = 50
	h := newHarness(t)
	h.startManager(controllers.Options{})
	answer := strings.Repeat("a", 1<<10) // 1 KiB answers: the transcript passes the hot budget by turn 30
	h.createAgent("chat", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn(answer)),
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}})
	h.createConversation("long", "chat")
	var sizes, written []int
	var last *exagentv1.AgentRun
	for i := 1; i <= turns; i++ {
		name := fmt.Sprintf("long-t%02d", i)
		h.createTurn(name, "chat", "long", fmt.Sprintf("prompt %d", i))
		last = h.waitPhase(name, exagentv1.PhaseSucceeded)
		b, err := json.Marshal(&last.Status)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(b))
		own := 0
		for _, seg := range segmentsOf(t, h, last) {
			sb, _ := json.Marshal(&seg.Spec)
			own += len(sb)
		}
		written = append(written, len(b)+own)
	}
	for i, n := range sizes {
		if n > 32<<10 {
			t.Errorf("turn %d's status is %d bytes, over the 32 KiB hot budget", i+1, n)
		}
	}
	if late, mid := written[turns-1], written[turns/2]; late > 2*mid {
		t.Errorf("bytes written by turn %d: %d, by turn %d: %d — growing with the turns (copied, not referenced)", turns, late, turns/2+1, mid)
	}
	t.Logf("status bytes per turn: first %d, middle %d, last %d; written (status + own segments): middle %d, last %d",
		sizes[0], sizes[turns/2], sizes[turns-1], written[turns/2], written[turns-1])
	n := 0
	for _, m := range transcriptMessages(t, h, last) {
		if m.Role == exagentv1.RoleUser {
			n++
		}
	}
	if n != turns {
		t.Errorf("the last turn's transcript holds %d prompts, want %d", n, turns)
	}
}

// TestRetentionKeepsAConversationsTurns: an Agent whose runs are deleted
// as soon as they end (TTL 0) and that keeps one ended run deletes a run
// on its own, but not the turns of a conversation: later turns continue
// their transcript. They go with the Conversation, whose own TTL (an hour
// here) beats its Agent's (retention_conversation_test.go).
func TestRetentionKeepsAConversationsTurns(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{RetentionWorkers: 1})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0), KeepLast: ptr.To[int32](1)})
	h.createConversation("kept", "pay", func(c *exagentv1.ConversationSpec) {
		c.Retention.TTL = &metav1.Duration{Duration: time.Hour}
	})
	for _, name := range []string{"kept-t1", "kept-t2"} {
		h.createTurn(name, "pay", "kept", "turn "+name)
		h.approve(h.waitPhase(name, exagentv1.PhaseAwaitingApproval), "ok")
		h.waitPhase(name, exagentv1.PhaseSucceeded)
	}
	h.probe("probe", "pay") // the single worker has looked at everything queued before it
	for _, name := range []string{"kept-t1", "kept-t2"} {
		if !h.exists(name) {
			t.Errorf("turn %s was reaped on its own", name)
		}
	}
}
