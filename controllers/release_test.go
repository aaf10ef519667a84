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
	"testing"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/loop"
)

// TestReleaseOnStop: a manager stopped while a model request is in flight
// hands the run back at once (Queued, no claim) instead of leaving it to
// its lease; the next manager re-sends the request (charged again) and
// finishes the run.
func TestReleaseOnStop(t *testing.T) {
	h := newHarness(t)
	cs := newChatServer(t)
	cs.gate = make(chan struct{})
	first := h.startManager(controllers.Options{ReleaseOnStop: true})
	h.createAgent("llm", exagentv1.AgentSpec{
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: cs.srv.URL + "/v1"},
		// No tools: the model's first answer (a call to an unknown tool) is
		// told to it, and its second ends the run.
	})
	h.createRun("r", "llm", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	h.waitRun("r", "a model request in flight", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseRunning && r.Status.Cursor.ModelRequest != nil && len(cs.requests()) == 1
	})
	first.stop()
	released := h.waitPhase("r", exagentv1.PhaseQueued)
	if released.Status.Claim != nil {
		t.Fatalf("claim = %+v after the release, want none", released.Status.Claim)
	}

	cs.mu.Lock()
	cs.gate = nil
	cs.mu.Unlock()
	h.startManager(controllers.Options{})
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if done.Status.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", done.Status.Attempts)
	}
	if done.Status.Ledger.Requests < 3 {
		t.Errorf("requests charged = %d, want the lost one counted too (>= 3)", done.Status.Ledger.Requests)
	}
}

// TestReleaseIgnoresAnOlderRunsResult: the hand-back at the stop applies
// only the results of this very run. A run deleted and re-created under
// the same name counts its attempts from 1 again, so an older run's
// result can carry the new run's fence: its UID keeps it out, here as in
// the reconcile.
func TestReleaseIgnoresAnOlderRunsResult(t *testing.T) {
	h := newHarness(t)
	cs := newChatServer(t)
	cs.gate = make(chan struct{})
	first := h.startManager(controllers.Options{ReleaseOnStop: true})
	h.createAgent("llm", exagentv1.AgentSpec{
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: cs.srv.URL + "/v1"},
	})
	h.createRun("r", "llm", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "1h" })
	running := h.waitRun("r", "a model request in flight", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseRunning && r.Status.Cursor.ModelRequest != nil && len(cs.requests()) == 1
	})
	const stale = "an answer for the run this name held before"
	fence := loop.Fence{Holder: running.Status.Claim.Holder, Attempt: running.Status.Claim.Attempt}
	first.ctrls.Runs.FileOlderRunsAnswer(types.NamespacedName{Namespace: h.ns, Name: "r"}, "uid-of-an-older-run", fence, stale)
	first.stop()
	released := h.waitPhase("r", exagentv1.PhaseQueued)
	if historyContains(released, stale) {
		t.Fatalf("the hand-back recorded an older run's answer: %+v", released.Status.History)
	}
	if released.Status.Cursor.ModelRequest == nil {
		t.Errorf("the model request was closed by the hand-back; want it open, for the next owner to send again")
	}
}
