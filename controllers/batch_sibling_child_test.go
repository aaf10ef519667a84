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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// toolRequests counts the requests the tool server received at path.
func (ts *toolServer) toolRequests(path string) int {
	n := 0
	for _, r := range ts.journal() {
		if r.Path == path {
			n++
		}
	}
	return n
}

// callsByID counts the run's journaled calls by id.
func callsByID(run *exagentv1.AgentRun) map[string][]exagentv1.ToolCall {
	out := map[string][]exagentv1.ToolCall{}
	for _, c := range run.Status.Calls {
		out[c.ID] = append(out[c.ID], c)
	}
	return out
}

// TestBatchSiblingBesideAPausedChild: one model turn asks for a delegation
// and an allowed http call, in that order. The http call runs and its
// outcome is confirmed; the child's call pauses for approval. The parent
// shows the child's wait (AwaitingApproval naming the child), with the
// sibling's outcome journaled once. After the child's approval and end the
// parent resumes with both results in the model's order — the child's
// first, though the sibling finished long before — and the sibling's tool
// was called exactly once (counted at the real tool server).
func TestBatchSiblingBesideAPausedChild(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("lead", exagentv1.AgentSpec{
		Instructions: "You coordinate.",
		Model: fixture.Scripted(
			exagentv1.ScriptTurn{ToolCalls: []exagentv1.ScriptToolCall{
				{ID: "hand", Name: "hand", Arguments: fixture.Raw(map[string]any{"input": "scale the web tier to 3"})},
				{ID: "look", Name: "lookup", Arguments: fixture.Raw(map[string]any{"amount": 1})},
			}},
			fixture.TextTurn("both done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.AgentTool("hand", "scaler"), fixture.HTTPTool("lookup", ts.url("/lookup"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	scaler := exagentv1.AgentSpec{
		Instructions: "You scale.",
		Model:        fixture.Scripted(fixture.CallTurn("scale", "scale", map[string]any{"amount": 3}), fixture.TextTurn("scaled to 3")),
		Tools:        []exagentv1.ToolSpec{fixture.HTTPTool("scale", ts.url("/scale"))},
		Policy:       fixture.AskPolicy("scale"),
	}
	scaler.Policy.Approvers = &exagentv1.Approvers{Users: []string{alice}}
	h.createAgent("scaler", scaler)
	h.createRun("batch", "lead")

	child := h.childOf("batch", "hand")
	h.waitPhase(child, exagentv1.PhaseAwaitingApproval)
	paused := h.waitRun("batch", "the parent showing the child's wait", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseAwaitingApproval && r.Status.Reason == exagentv1.ReasonChildAwaitingApproval
	})
	if !strings.Contains(paused.Status.Message, child) {
		t.Errorf("parent message %q does not name the child %s", paused.Status.Message, child)
	}
	calls := callsByID(paused)
	if look := calls["look"]; len(look) != 1 || look[0].State != exagentv1.CallSucceeded {
		t.Errorf("the sibling's journal = %+v, want its confirmed outcome once", look)
	}
	if hand := calls["hand"]; len(hand) != 1 || hand[0].State != exagentv1.CallStarted {
		t.Errorf("the delegation's journal = %+v, want it Started while the child waits", hand)
	}
	if n := ts.toolRequests("/lookup"); n != 1 {
		t.Fatalf("the sibling's tool was called %d times before the pause, want once", n)
	}
	if n := ts.toolRequests("/scale"); n != 0 {
		t.Fatalf("the child's call ran %d times before its approval", n)
	}

	a := pendingApproval(t, h.get(child))
	h.decide(alice, h.decision(child, "alice").Approve(a).Reason("ok"))
	if d := h.waitDecision(child + "-alice"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("alice's decision = %s (%s), want Applied", d.Status.Phase, d.Status.Message)
	}
	done := h.waitPhase("batch", exagentv1.PhaseSucceeded)
	if done.Status.Output != "both done" {
		t.Errorf("parent output = %q, want the model's last turn", done.Status.Output)
	}
	if n := ts.toolRequests("/lookup"); n != 1 {
		t.Errorf("the sibling's tool was called %d times in all, want exactly once (its confirmed outcome reused on resume)", n)
	}
	if n := ts.toolRequests("/scale"); n != 1 {
		t.Errorf("the child's approved call ran %d times, want once", n)
	}

	// The transcript: the model's two calls, then their results in the
	// model's order, each once.
	var asked []string
	var results []exagentv1.Message
	for _, m := range done.Status.History {
		switch {
		case m.Role == exagentv1.RoleAssistant && len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				asked = append(asked, c.ID)
			}
		case m.ToolCallID != "":
			results = append(results, m)
		}
	}
	if strings.Join(asked, ",") != "hand,look" {
		t.Fatalf("the model's calls in the transcript = %v, want [hand look]", asked)
	}
	var order []string
	for _, m := range results {
		order = append(order, m.ToolCallID)
	}
	if strings.Join(order, ",") != "hand,look" {
		t.Fatalf("results in the transcript = %v, want [hand look]: the model's order, each once", order)
	}
	if !strings.Contains(results[0].Content, "scaled to 3") {
		t.Errorf("the delegation's result %q is not the child's output", results[0].Content)
	}
	if !strings.Contains(results[1].Content, `"ok":true`) {
		t.Errorf("the sibling's result %q is not the tool's answer", results[1].Content)
	}
}
