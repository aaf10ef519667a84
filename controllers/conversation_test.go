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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
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
		h.createRun(name, "pay", turnOf("chat"))
	}
	first := h.waitPhase("chat-t1", exagentv1.PhaseAwaitingApproval)
	h.waitingForTurn("chat-t2", "chat-t1")
	h.waitingForTurn("chat-t3", "chat-t1")

	h.approve(first, "ok")
	h.waitPhase("chat-t1", exagentv1.PhaseSucceeded)
	second := h.waitPhase("chat-t2", exagentv1.PhaseAwaitingApproval)
	h.waitingForTurn("chat-t3", "chat-t2")

	h.approve(second, "ok")
	h.waitPhase("chat-t2", exagentv1.PhaseSucceeded)
	h.approve(h.waitPhase("chat-t3", exagentv1.PhaseAwaitingApproval), "ok")
	h.waitPhase("chat-t3", exagentv1.PhaseSucceeded)

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
