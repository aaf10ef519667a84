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
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/store"
)

// TestApproveResumesInOneWrite: the approval is applied, the run claimed
// and the tool's intent committed in one status write; the tool request
// arrives with nothing else written in between, and the run goes on as
// before (the refund runs once, the run succeeds, the decision is Applied).
func TestApproveResumesInOneWrite(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	// The writes are counted as the store sends them (the hook runs right
	// before each), not by Store.Writes after the fact: that counter moves
	// once the write has returned, which on a loaded machine can be after
	// the test has already seen the paused run and read it.
	var (
		mu      sync.Mutex
		sent    []exagentv1.RunPhase
		atTool  int
		running *exagentv1.AgentRun
	)
	m := h.startManager(controllers.Options{Hooks: controllers.Hooks{BeforeStatusWrite: func(_ context.Context, _ types.NamespacedName, st *exagentv1.AgentRunStatus) {
		mu.Lock()
		sent = append(sent, st.Phase)
		mu.Unlock()
	}}})
	ts.respond = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		run := &exagentv1.AgentRun{}
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "r1"}, run)
		mu.Lock()
		atTool = len(sent)
		if err == nil {
			running = run
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	h.createAgent("payments", refundAgent(ts))
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)

	h.approve(paused, "ok")
	h.waitPhase("r1", exagentv1.PhaseSucceeded)
	if d := h.waitDecision("r1-ok"); d.Status.Phase != exagentv1.DecisionApplied {
		t.Errorf("decision = %s (%s), want Applied", d.Status.Phase, d.Status.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	pause := slices.Index(sent, exagentv1.PhaseAwaitingApproval)
	if pause < 0 || pause >= atTool {
		t.Fatalf("writes sent %v, the tool request after %d of them: no pause before the tool request", sent, atTool)
	}
	if got := atTool - pause - 1; got != 1 {
		t.Errorf("status writes from the approval to the tool request = %d, want 1 (decision, claim and intent together)", got)
	}
	if running == nil {
		t.Fatal("the tool request could not read the run")
	}
	if running.Status.Phase != exagentv1.PhaseRunning || running.Status.Claim == nil || running.Status.Claim.Holder != m.ctrls.Runs.Holder {
		t.Errorf("at the tool request the run is %s claimed by %+v, want Running by %s", running.Status.Phase, running.Status.Claim, m.ctrls.Runs.Holder)
	}
	if len(running.Status.Approvals) != 1 || running.Status.Approvals[0].State != exagentv1.ApprovalApproved {
		t.Errorf("approvals at the tool request = %+v, want the one Approved", running.Status.Approvals)
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("refunds = %d, want 1", got)
	}
}

// TestWaitingRunKeepsItsJournal: the cache keeps only a summary of a
// waiting run, yet a write to it (its Agent went missing: Ready=False)
// is computed from the whole run, so its transcript and call arguments
// survive; the approval then still applies to the whole run.
func TestWaitingRunKeepsItsJournal(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	spec := refundAgent(ts)
	h.createAgent("payments", spec)
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	if len(paused.Status.History) == 0 || paused.Status.Calls[0].Args == "" {
		t.Fatalf("paused run without its journal: %+v", paused.Status)
	}
	if err := h.c.Delete(context.Background(), &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: h.ns}}); err != nil {
		t.Fatal(err)
	}
	missing := h.waitRun("r1", "Ready=False AgentNotFound", readyReason(exagentv1.ReasonAgentNotFound))
	if diff := cmp.Diff(paused.Status.History, missing.Status.History); diff != "" {
		t.Errorf("transcript changed by the write to the waiting run (-before +after):\n%s", diff)
	}
	if got, want := missing.Status.Calls[0].Args, paused.Status.Calls[0].Args; got != want {
		t.Errorf("call arguments = %q, want %q", got, want)
	}
	h.createAgent("payments", spec)
	h.waitAgentSeen("payments")
	h.approve(paused, "ok")
	done := h.waitPhase("r1", exagentv1.PhaseSucceeded)
	if len(done.Status.History) <= len(paused.Status.History) {
		t.Errorf("the finished run's transcript has %d entries, fewer than the %d it paused with", len(done.Status.History), len(paused.Status.History))
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("refunds = %d, want 1", got)
	}
}

// TestCacheSummarizesWaitingRuns: a run waiting for a human is cached
// without its transcript and call arguments, and marked so that nothing is
// ever written from that copy.
func TestCacheSummarizesWaitingRuns(t *testing.T) {
	var transform func(any) (any, error)
	for obj, by := range store.CacheOptions().ByObject {
		if _, ok := obj.(*exagentv1.AgentRun); ok {
			transform = by.Transform
		}
	}
	for _, phase := range []exagentv1.RunPhase{exagentv1.PhaseAwaitingApproval, exagentv1.PhaseUncertain} {
		out, err := transform(&exagentv1.AgentRun{
			ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: map[string]string{"team": "a"}},
			Status: exagentv1.AgentRunStatus{Phase: phase,
				History:   []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "hi"}},
				Calls:     []exagentv1.ToolCall{{ID: "c1", Tool: "pay", Args: `{"amount":5}`, State: exagentv1.CallPending, PayloadHash: "sha256:p"}},
				Approvals: []exagentv1.Approval{{ID: "c1-r1", CallID: "c1", State: exagentv1.ApprovalPending}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		run := out.(*exagentv1.AgentRun)
		if run.Status.History != nil || run.Status.Calls[0].Args != "" {
			t.Errorf("%s: the cache kept the journal's bulk: %+v", phase, run.Status)
		}
		if len(run.Status.Approvals) != 1 || run.Status.Calls[0].PayloadHash != "sha256:p" || run.Annotations["team"] != "a" {
			t.Errorf("%s: the summary lost what the controllers read: %+v", phase, run)
		}
		if _, err := store.NewStore(nil, nil).Commit(context.Background(), store.Write{Run: run, Status: run.Status, Now: time.Now()}); err == nil {
			t.Errorf("%s: a status computed from the summary was written", phase)
		}
	}
}
