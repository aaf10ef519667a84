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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
)

// TestCancelInEveryPhase: a Cancel, with no pending approval named, ends a
// run in each phase that has not ended — not started (its Agent has a tool
// kind this version cannot run), AwaitingApproval, Approved (held there by
// a drifted Agent) and Uncertain — with the manager running; nothing more
// runs after it. Queued and Running have tests of their own below and in
// cancel_test.go.
func TestCancelInEveryPhase(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ts.respond = func(_ http.ResponseWriter, r *http.Request, _ []byte) {
		if strings.HasSuffix(r.URL.Path, "/hang") {
			<-r.Context().Done() // sent, never answered: the outcome is unknown
		}
	}
	h.startManager(controllers.Options{})

	mcp := refundAgent(ts)
	// An mcp tool whose server never answers holds the run unstarted.
	mcp.Tools = append(mcp.Tools, exagentv1.ToolSpec{Name: "remote", Description: "a server that is not there",
		MCP: &exagentv1.MCPTool{URL: "http://127.0.0.1:1/mcp", Timeout: "1s"}})
	h.createAgent("not-started", mcp)
	h.createAgent("awaiting", refundAgent(ts))
	h.createAgent("approved", refundAgent(ts))
	hang := refundAgent(ts)
	hang.Tools = []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/hang"))}
	hang.Tools[0].HTTP.Timeout = "1s"
	hang.Policy = exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}
	h.createAgent("uncertain", hang)
	for _, name := range []string{"not-started", "awaiting", "approved", "uncertain"} {
		h.createRun(name, name)
	}

	// Each run reaches, and is held in, the phase its case is about.
	h.waitRun("not-started", "the run held unstarted", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == "" && hasCondition(r, exagentv1.ConditionReady, exagentv1.ReasonMCPServerUnavailable)
	})
	h.waitPhase("awaiting", exagentv1.PhaseAwaitingApproval)
	paused := h.waitPhase("approved", exagentv1.PhaseAwaitingApproval)
	agent := &exagentv1.Agent{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "approved"}, agent); err != nil {
		t.Fatal(err)
	}
	agent.Spec.Instructions = "You refund customers, politely." // the definition drifts: no worker resumes the run
	if err := h.c.Update(context.Background(), agent); err != nil {
		t.Fatal(err)
	}
	if d := h.waitDecision(h.approve(paused, "ok").Name); d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("approve = %s: %s", d.Status.Phase, d.Status.Message)
	}
	h.waitRun("approved", "the approved run held by the drift", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseApproved && hasCondition(r, exagentv1.ConditionReady, exagentv1.ReasonDefinitionChanged)
	})
	h.waitPhase("uncertain", exagentv1.PhaseUncertain)
	effects := len(ts.journal())

	for _, name := range []string{"not-started", "awaiting", "approved", "uncertain"} {
		t.Run(name, func(t *testing.T) {
			sub := &harness{t: t, ns: h.ns, c: h.c}
			d := sub.waitDecision(sub.decide(alice, sub.decision(name, "stop").Cancel().Reason("not needed")).Name)
			if d.Status.Phase != exagentv1.DecisionApplied {
				t.Fatalf("cancel = %s: %s", d.Status.Phase, d.Status.Message)
			}
			run := sub.waitPhase(name, exagentv1.PhaseCancelled)
			if run.Status.Reason != exagentv1.ReasonCancelled || run.Status.Claim != nil || run.Status.PendingApprovals != 0 ||
				!strings.HasPrefix(run.Status.Message, "cancelled by alice: not needed") {
				t.Errorf("reason %s claim %v pending %d message %q", run.Status.Reason, run.Status.Claim, run.Status.PendingApprovals, run.Status.Message)
			}
		})
	}
	if got := len(ts.journal()); got != effects {
		t.Errorf("%d tool calls after the cancels, want none", got-effects)
	}

	t.Run("a Cancelled run's Uncertain call is resolved for the record", func(t *testing.T) {
		sub := &harness{t: t, ns: h.ns, c: h.c}
		run := sub.waitPhase("uncertain", exagentv1.PhaseCancelled)
		c := run.Status.UncertainCalls()
		if len(c) != 1 {
			t.Fatalf("want the one call in doubt still Uncertain, have %+v", run.Status.Calls)
		}
		retry := sub.waitDecision(sub.decide(alice, sub.decision("uncertain", "retry").Resolve(c[0], run.Status.Revision, exagentv1.ResolveRetry, "")).Name)
		if retry.Status.Phase != exagentv1.DecisionRejected || !strings.Contains(retry.Status.Message, "nothing runs again") {
			t.Errorf("retry on a cancelled run = %s: %s", retry.Status.Phase, retry.Status.Message)
		}
		rec := sub.waitDecision(sub.decide(alice, sub.decision("uncertain", "record").Resolve(c[0], run.Status.Revision, exagentv1.ResolveFailed, "no refund in the ledger")).Name)
		if rec.Status.Phase != exagentv1.DecisionApplied {
			t.Fatalf("resolve on a cancelled run = %s: %s", rec.Status.Phase, rec.Status.Message)
		}
		after := sub.waitRun("uncertain", "the call recorded", func(r *exagentv1.AgentRun) bool {
			return len(r.Status.UncertainCalls()) == 0
		})
		got := after.Status.Calls[0]
		if after.Status.Phase != exagentv1.PhaseCancelled || got.State != exagentv1.CallFailed || got.Outcome == nil ||
			got.Outcome.Evidence != "no refund in the ledger" || got.Outcome.ResolvedBy != alice {
			t.Errorf("phase %s, call %s %+v", after.Status.Phase, got.State, got.Outcome)
		}
		if hasCondition(after, exagentv1.ConditionUncertain, exagentv1.ReasonOutcomeUncertain) {
			t.Errorf("the Uncertain condition is still set: %+v", after.Status.Conditions)
		}
	})
	if got := len(ts.journal()); got != effects {
		t.Errorf("%d tool calls after the resolve, want none", got-effects)
	}
}

// TestCancelQueued: a Queued run no worker has claimed yet is cancelled by
// the decision controller; no model request is ever made.
func TestCancelQueued(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	agent := h.createAgent("refunds", refundAgent(ts))
	run := h.createRun("queued", "refunds")
	env, err := loop.NewEnv(loop.EnvInput{RunUID: string(run.UID), RunName: run.Name, Agent: &agent.Spec,
		AgentGeneration: agent.Generation, Run: &run.Spec})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := loop.Start(run.Status, env, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.setStatus(run, queued)
	h.startDecisionsOnly(nil, nil)

	d := h.waitDecision(h.decide(alice, h.decision("queued", "stop").Cancel()).Name)
	if d.Status.Phase != exagentv1.DecisionApplied {
		t.Fatalf("cancel = %s: %s", d.Status.Phase, d.Status.Message)
	}
	got := h.waitPhase("queued", exagentv1.PhaseCancelled)
	if got.Status.Ledger.Requests != 0 || got.Status.Attempts != 0 || len(ts.journal()) != 0 {
		t.Errorf("a queued run that was cancelled did work: requests %d attempts %d effects %d",
			got.Status.Ledger.Requests, got.Status.Attempts, len(ts.journal()))
	}
}
