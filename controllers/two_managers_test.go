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
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestTwoManagers runs two operators at once on the same runs, with no
// leader election: the claim and its attempt fence every commit, so every
// effect happens at most once (here: exactly once, every run succeeds).
func TestTwoManagers(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{MaxConcurrentReconciles: 2})
	h.startManager(controllers.Options{MaxConcurrentReconciles: 2})
	h.createAgent("ops", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("lookup", "lookup", map[string]any{"amount": 1}),
			fixture.CallTurn("refund", "refund", map[string]any{"amount": 2}),
			fixture.TextTurn("done"),
		),
		Tools: []exagentv1.ToolSpec{
			fixture.HTTPTool("lookup", ts.url("/lookup")),
			fixture.HTTPTool("refund", ts.url("/refund")),
		},
		Policy: fixture.AskPolicy("refund"),
	})
	const n = 8
	for i := range n {
		h.createRun(fmt.Sprintf("run-%d", i), "ops")
	}
	for i := range n {
		h.approve(h.waitPhase(fmt.Sprintf("run-%d", i), exagentv1.PhaseAwaitingApproval), "ok")
	}
	want := map[string]int{}
	for i := range n {
		run := h.waitPhase(fmt.Sprintf("run-%d", i), exagentv1.PhaseSucceeded)
		want[string(run.UID)+"/lookup"] = 1
		want[string(run.UID)+"/refund"] = 1
	}
	got := map[string]int{}
	for _, r := range ts.journal() {
		got[r.Key]++
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effects per Idempotency-Key (-want +got):\n%s", diff)
	}
}
