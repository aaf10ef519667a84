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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestWaitsAndDrift covers runs that must not do IO: a missing Agent, a
// tool kind this version does not run, a paused run whose Agent definition
// changed, and one whose policy tightened (applied as a restriction); and
// a run whose script is exhausted.
func TestWaitsAndDrift(t *testing.T) {
	tests := map[string]func(t *testing.T, h *harness, ts *toolServer){
		"missing agent waits, then runs when the agent appears": func(t *testing.T, h *harness, ts *toolServer) {
			h.createRun("late", "late-agent")
			h.waitRun("late", "Ready=False AgentNotFound", readyReason(exagentv1.ReasonAgentNotFound))
			h.createAgent("late-agent", exagentv1.AgentSpec{Model: exagentv1.ModelSpec{
				Provider: exagentv1.ModelProviderScripted, Script: []exagentv1.ScriptTurn{fixture.TextTurn("hello")}}})
			h.waitPhase("late", exagentv1.PhaseSucceeded)
		},
		"the deadline applies to a run whose agent never appears": func(t *testing.T, h *harness, ts *toolServer) {
			h.createRun("orphan", "never-created", func(r *exagentv1.AgentRunSpec) {
				r.Deadline = &metav1.Time{Time: time.Now().Add(3 * time.Second)}
			})
			h.waitRun("orphan", "Ready=False AgentNotFound", readyReason(exagentv1.ReasonAgentNotFound))
			run := h.waitPhase("orphan", exagentv1.PhaseExpired)
			if run.Status.Reason != exagentv1.ReasonDeadlineExceeded {
				t.Errorf("reason = %q, want %q", run.Status.Reason, exagentv1.ReasonDeadlineExceeded)
			}
		},
		"the deadline still applies when the agent is deleted during the wait": func(t *testing.T, h *harness, ts *toolServer) {
			h.createAgent("gone", refundAgent(ts))
			h.createRun("gone", "gone", func(r *exagentv1.AgentRunSpec) {
				r.Deadline = &metav1.Time{Time: time.Now().Add(3 * time.Second)}
			})
			h.waitPhase("gone", exagentv1.PhaseAwaitingApproval)
			if err := h.c.Delete(context.Background(), &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: h.ns}}); err != nil {
				t.Fatal(err)
			}
			h.waitRun("gone", "Ready=False AgentNotFound", readyReason(exagentv1.ReasonAgentNotFound))
			run := h.waitPhase("gone", exagentv1.PhaseExpired)
			if run.Status.Reason != exagentv1.ReasonDeadlineExceeded {
				t.Errorf("reason = %s, want DeadlineExceeded", run.Status.Reason)
			}
		},
		"an exhausted script fails the run": func(t *testing.T, h *harness, ts *toolServer) {
			spec := refundAgent(ts)
			spec.Model.Script = spec.Model.Script[:1]
			spec.Policy = exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}
			h.createAgent("short", spec)
			h.createRun("short", "short")
			run := h.waitPhase("short", exagentv1.PhaseFailed)
			if run.Status.Reason != exagentv1.ReasonScriptExhausted {
				t.Errorf("reason = %s (%s), want ScriptExhausted", run.Status.Reason, run.Status.Message)
			}
			if got := len(ts.journal()); got != 1 {
				t.Errorf("effects = %d, want 1", got)
			}
		},
		"a changed definition does not resume": func(t *testing.T, h *harness, ts *toolServer) {
			h.createAgent("drift", refundAgent(ts))
			h.createRun("drift", "drift")
			paused := h.waitPhase("drift", exagentv1.PhaseAwaitingApproval)
			h.updateAgent("drift", func(a *exagentv1.AgentSpec) { a.Instructions = "You refund everyone twice." })
			h.approve(paused, "ok")
			run := h.waitRun("drift", "Ready=False DefinitionChanged", readyReason(exagentv1.ReasonDefinitionChanged))
			if run.Status.Phase != exagentv1.PhaseApproved || run.Status.Claim != nil {
				t.Errorf("phase %s claim %+v, want Approved and unclaimed", run.Status.Phase, run.Status.Claim)
			}
			if got := len(ts.journal()); got != 0 {
				t.Errorf("effects = %d, want 0", got)
			}
		},
		"a tightened policy is applied as a restriction": func(t *testing.T, h *harness, ts *toolServer) {
			h.createAgent("tight", refundAgent(ts))
			h.createRun("tight", "tight")
			paused := h.waitPhase("tight", exagentv1.PhaseAwaitingApproval)
			h.updateAgent("tight", func(a *exagentv1.AgentSpec) {
				a.Policy.Rules = []exagentv1.PolicyRule{{Name: "no-refunds", Tools: []string{"refund"}, Action: exagentv1.PolicyDeny}}
			})
			h.approve(paused, "ok")
			run := h.waitPhase("tight", exagentv1.PhaseSucceeded)
			if c := run.Status.Calls[0]; c.State != exagentv1.CallRefused {
				t.Errorf("call state = %s, want Refused by the current policy", c.State)
			}
			if got := len(ts.journal()); got != 0 {
				t.Errorf("effects = %d, want 0", got)
			}
		},
	}
	h := newHarness(t)
	h.startManager(controllers.Options{})
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			fn(t, &harness{t: t, ns: h.ns, c: h.c}, newToolServer(t))
		})
	}
}

func readyReason(reason string) func(*exagentv1.AgentRun) bool {
	return func(r *exagentv1.AgentRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, exagentv1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
	}
}

func (h *harness) updateAgent(name string, mutate func(*exagentv1.AgentSpec)) {
	h.t.Helper()
	var a exagentv1.Agent
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &a); err != nil {
		h.t.Fatal(err)
	}
	mutate(&a.Spec)
	if err := h.c.Update(context.Background(), &a); err != nil {
		h.t.Fatalf("updating agent %s: %v", name, err)
	}
}
