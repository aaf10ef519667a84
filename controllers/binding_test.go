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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestBindingCoversWhatTheCallDoes: an approval binds what the call does
// (docs/architecture.md §13), and arguments are checked against the tool's schema
// before policy and before any IO.
func TestBindingCoversWhatTheCallDoes(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})

	t.Run("a URL changed while the run waits re-asks; the old approval sends nothing", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		staging, prod := newToolServer(t), newToolServer(t)
		h.createAgent("moving", refundAgent(staging))
		h.createRun("moving", "moving")
		paused := h.waitPhase("moving", exagentv1.PhaseAwaitingApproval)
		old := pendingApproval(t, paused)

		h.updateAgent("moving", func(a *exagentv1.AgentSpec) { a.Tools[0].HTTP.URL = prod.url("/refund") })
		h.waitAgentSeen("moving")

		// The approval alice saw was for staging; the call would now go to prod.
		h.approve(paused, "old")
		again := h.waitRun("moving", "a new approval at revision 2", func(r *exagentv1.AgentRun) bool {
			return r.Status.Phase == exagentv1.PhaseAwaitingApproval && r.Status.Revision == 2
		})
		fresh := pendingApproval(t, again)
		if fresh.PayloadHash == old.PayloadHash || fresh.Revision != 2 {
			t.Fatalf("new approval %+v is bound like the old one %+v", fresh, old)
		}
		if c := again.Status.Calls[0]; c.State != exagentv1.CallPending || c.IdempotencyKey != "" {
			t.Errorf("call %s key %q: it must not have started", c.State, c.IdempotencyKey)
		}
		if got := append(staging.journal(), prod.journal()...); len(got) != 0 {
			t.Fatalf("the old approval sent a request: %+v", got)
		}

		h.approve(again, "new")
		done := h.waitPhase("moving", exagentv1.PhaseSucceeded)
		want := []toolRequest{{Path: "/refund", Key: string(done.UID) + "/refund-1", Run: h.ns + "/moving", Call: "refund-1", Body: `{"amount":5}`}}
		if diff := cmp.Diff(want, prod.journal()); diff != "" {
			t.Errorf("prod journal (-want +got):\n%s", diff)
		}
		if got := staging.journal(); len(got) != 0 {
			t.Errorf("staging received %+v", got)
		}
	})

	t.Run("a schema tightened while the run waits fails the approved call; it never runs", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		ts := newToolServer(t)
		h.createAgent("tightened", refundAgent(ts))
		h.createRun("tightened", "tightened")
		paused := h.waitPhase("tightened", exagentv1.PhaseAwaitingApproval)
		h.updateAgent("tightened", func(a *exagentv1.AgentSpec) {
			a.Tools[0].Parameters = fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{
				"amount": map[string]any{"type": "integer", "maximum": 3}}})
		})
		h.waitAgentSeen("tightened")
		h.approve(paused, "ok")
		done := h.waitPhase("tightened", exagentv1.PhaseSucceeded)
		wantFailed(t, done, `at /amount: maximum: got 5, want 3`)
		if got := ts.journal(); len(got) != 0 {
			t.Errorf("effects = %+v, want none", got)
		}
	})

	t.Run("arguments out of range fail before policy, even under Allow", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		ts := newToolServer(t)
		spec := refundAgent(ts)
		spec.Tools[0].Parameters = fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{
			"amount": map[string]any{"type": "integer", "maximum": 2}}, "required": []string{"amount"}})
		spec.Policy = exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}
		h.createAgent("bounded", spec)
		h.createRun("bounded", "bounded")
		done := h.waitPhase("bounded", exagentv1.PhaseSucceeded)
		wantFailed(t, done, `at /amount: maximum: got 5, want 2`)
		if len(done.Status.Approvals) != 0 || done.Status.Revision != 0 {
			t.Errorf("approvals %+v revision %d: an invalid call is never asked about", done.Status.Approvals, done.Status.Revision)
		}
		if got := ts.journal(); len(got) != 0 {
			t.Errorf("effects = %+v, want none", got)
		}
	})
}

// wantFailed checks that the run's only call failed with the validator's
// message and that the model was told.
func wantFailed(t *testing.T, run *exagentv1.AgentRun, problem string) {
	t.Helper()
	c := run.Status.Calls[0]
	if c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, "InvalidArguments") ||
		!strings.Contains(c.Outcome.Result, problem) || c.IdempotencyKey != "" {
		t.Fatalf("call = %s %+v key %q, want Failed with %q", c.State, c.Outcome, c.IdempotencyKey, problem)
	}
	for _, m := range run.Status.History {
		if m.Role == exagentv1.RoleTool && m.ToolCallID == c.ID && strings.Contains(m.Content, problem) {
			return
		}
	}
	t.Errorf("the model was not told %q: %+v", problem, run.Status.History)
}

// waitAgentSeen waits until the manager's cache holds the Agent's current
// generation, so that what the test does next is judged against it. A
// probe run of that Agent binds the generation its claim read from the
// cache (it pauses at its own approval or fails its call; it never sends
// anything); a probe that read a stale cache is followed by another, and
// the cache only moves forward.
func (h *harness) waitAgentSeen(name string) {
	h.t.Helper()
	var a exagentv1.Agent
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &a); err != nil {
		h.t.Fatal(err)
	}
	for i := range 5 {
		probe := fmt.Sprintf("%s-probe-%d", name, i)
		h.createRun(probe, name)
		r := h.waitRun(probe, "a claim", func(r *exagentv1.AgentRun) bool { return r.Status.Binding != nil })
		if r.Status.Binding.AgentGeneration == a.Generation {
			return
		}
	}
	h.t.Fatalf("the manager never saw generation %d of agent %s", a.Generation, name)
}
