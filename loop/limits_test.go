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

package loop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// limitsAgent is defaultEnv's Agent (search allowed, pay asks) with edits.
func limitsAgent() *fixture.AgentWrapper {
	return MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search")
}

// limitsRun is a run whose lease outlasts the minutes the tests let pass.
func limitsRun() *fixture.RunWrapper { return MakeRun().Lease("2h") }

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// TestLimitsJournaledAtFirstClaim: the first claim journals the limits
// the run holds — its Agent's, narrowed by its ancestors' reservation and
// its own activeTimeLimit — in the claim's own write; a later claim keeps
// what was journaled, whatever the Agent says by then.
func TestLimitsJournaledAtFirstClaim(t *testing.T) {
	full := limitsAgent().MaxSteps(5).MaxToolCalls(4).MaxTokens(1000).MaxRuns(7).MaxDepth(2).ActiveTime("30m")
	delegated := MakeRun().ActiveTimeLimit(exagentv1.Never).Apply(func(r *exagentv1.AgentRun) {
		r.Spec.Delegation = &exagentv1.Delegation{
			Parent: exagentv1.RunReference{Name: "p", UID: "p-uid"}, Root: exagentv1.RunReference{Name: "p", UID: "p-uid"},
			CallID: "d1", Ancestry: []string{"p-uid/d1"},
			Limits: exagentv1.DelegatedLimits{MaxSteps: new(int32(2)), MaxToolCalls: new(int32(1)), MaxTokens: new(int64(50)),
				MaxDepth: new(int32(1)), MaxRuns: new(int32(3))},
		}
	})
	cases := map[string]struct {
		agent *fixture.AgentWrapper
		run   *fixture.RunWrapper
		// before is the journal the run holds before the claim.
		before *exagentv1.RunLimits
		want   *exagentv1.RunLimits
	}{
		"the Agent's limits": {agent: full, run: MakeRun(),
			want: &exagentv1.RunLimits{MaxSteps: new(int32(5)), MaxToolCalls: new(int32(4)), MaxTokens: new(int64(1000)),
				MaxRuns: new(int32(7)), MaxDepth: new(int32(2)), ActiveTime: dur(30 * time.Minute), MaxWait: dur(exagentv1.DefaultMaxWait)}},
		"the run's stricter activeTimeLimit": {agent: full, run: MakeRun().ActiveTimeLimit("10m"),
			want: &exagentv1.RunLimits{MaxSteps: new(int32(5)), MaxToolCalls: new(int32(4)), MaxTokens: new(int64(1000)),
				MaxRuns: new(int32(7)), MaxDepth: new(int32(2)), ActiveTime: dur(10 * time.Minute), MaxWait: dur(exagentv1.DefaultMaxWait)}},
		"no limits set: the defaults that bound a tree, no active time": {agent: limitsAgent(), run: MakeRun().ActiveTimeLimit(exagentv1.Never),
			want: &exagentv1.RunLimits{MaxRuns: new(int32(exagentv1.DefaultMaxRuns)), MaxDepth: new(int32(exagentv1.DefaultMaxDepth)),
				MaxWait: dur(exagentv1.DefaultMaxWait)}},
		"a child's: narrowed by what its parent reserved": {agent: full, run: delegated,
			want: &exagentv1.RunLimits{MaxSteps: new(int32(2)), MaxToolCalls: new(int32(1)), MaxTokens: new(int64(50)),
				MaxRuns: new(int32(3)), MaxDepth: new(int32(1)), ActiveTime: dur(30 * time.Minute), MaxWait: dur(exagentv1.DefaultMaxWait)}},
		"a later claim keeps the journal": {agent: full, run: MakeRun(),
			before: &exagentv1.RunLimits{MaxSteps: new(int32(9)), ActiveTime: dur(time.Hour)},
			want:   &exagentv1.RunLimits{MaxSteps: new(int32(9)), ActiveTime: dur(time.Hour)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := mustEnv(t, tc.agent.Spec(), tc.run.Spec())
			s := queued(t, env)
			if s.Limits != nil {
				t.Fatalf("a started run journals limits %+v before its claim", s.Limits)
			}
			s.Limits = tc.before
			got, _, err := Claim(s, env, w1, t0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Limits); diff != "" {
				t.Errorf("status.limits (-want +got):\n%s", diff)
			}
		})
	}
}

// pausedUnder is a run of agent paused for the approval of p1 (search s1
// ran): one model request, one tool call and 15 tokens spent, 9 minutes
// of active time used.
func pausedUnder(t *testing.T, agent *fixture.AgentWrapper, run *fixture.RunWrapper) *harness {
	t.Helper()
	h := newHarness(t, mustEnv(t, agent.Spec(), run.Spec())).claim(w1)
	h.step()
	h.respond(tools(call("s1", "search", `{"q":"x"}`), call("p1", "pay", `{"amount":42}`)))
	h.step()
	h.advance(9 * time.Minute)
	h.outcome("s1", ResultSucceeded, "found")
	if act := h.step(); act.Kind != ActPause {
		t.Fatalf("fixture: %s (%s), want the run paused", describe(act), h.s.Message)
	}
	return h
}

// driveToEnd approves p1 under env (the Agent as edited) and runs the run
// on: every tool call succeeds, the model always asks for one more search,
// two minutes pass before each step. It returns the run's end (or where it
// stood after many steps).
func driveToEnd(t *testing.T, h *harness, env *Env) {
	t.Helper()
	h.env = env
	h.decide(approveCmd(t, h.s, "p1", "op-1", "alice"))
	h.claim("worker-2")
	for i := 0; i < 60 && !h.s.Phase.IsTerminal(); i++ {
		h.advance(2 * time.Minute)
		switch act := h.step(); act.Kind {
		case ActRunTools:
			for _, c := range act.Calls {
				h.outcome(c.CallID, ResultSucceeded, "ok")
			}
		case ActCallModel:
			h.respond(tools(call(fmt.Sprintf("q%d", i), "search", `{"q":"more"}`)))
		}
	}
}

// TestAgentEditNeverWidensARun: an Agent's limit raised while its run
// waits for approval leaves the run bound by the limit it started with —
// it stops there, LimitExceeded, as it would have without the edit. (The
// Agent's limits are in no fingerprint: before status.limits the run
// went on to the raised limit.)
func TestAgentEditNeverWidensARun(t *testing.T) {
	cases := map[string]struct {
		agent, raised *fixture.AgentWrapper
		run           *fixture.RunWrapper
		wantMsg       string
	}{
		"maxToolCalls": {agent: limitsAgent().MaxToolCalls(1), raised: limitsAgent().MaxToolCalls(100),
			run: limitsRun(), wantMsg: "limit maxToolCalls (1) reached"},
		"maxSteps": {agent: limitsAgent().MaxSteps(2), raised: limitsAgent().MaxSteps(1000),
			run: limitsRun(), wantMsg: "limit maxSteps (2) reached"},
		"maxTokens": {agent: limitsAgent().MaxTokens(20), raised: limitsAgent().MaxTokens(1 << 40),
			run: limitsRun(), wantMsg: "limit maxTokens (20) reached"},
		"activeTime": {agent: limitsAgent().ActiveTime("10m"), raised: limitsAgent().ActiveTime("100h"),
			run: limitsRun().ActiveTimeLimit(exagentv1.Never), wantMsg: "limit activeTime (10m0s) reached"},
		"activeTime removed": {agent: limitsAgent().ActiveTime("10m"), raised: limitsAgent(),
			run: limitsRun().ActiveTimeLimit(exagentv1.Never), wantMsg: "limit activeTime (10m0s) reached"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := pausedUnder(t, tc.agent, tc.run)
			journaled := h.s.Limits.DeepCopy()
			driveToEnd(t, h, mustEnv(t, tc.raised.Spec(), tc.run.Spec()))
			if h.s.Phase != exagentv1.PhaseFailed || h.s.Reason != exagentv1.ReasonLimitExceeded || !strings.Contains(h.s.Message, tc.wantMsg) {
				t.Fatalf("run %s %s %q, want Failed LimitExceeded %q: the raised limit widened the run\n%s",
					h.s.Phase, h.s.Reason, h.s.Message, tc.wantMsg, strings.Join(h.log, "\n"))
			}
			if diff := cmp.Diff(journaled, h.s.Limits); diff != "" {
				t.Errorf("status.limits changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestAgentEditNarrowsARun: an Agent's limit lowered while its run waits
// is in force at once; the journal keeps what the run started with, so
// the Agent raised again later gives back at most that.
func TestAgentEditNarrowsARun(t *testing.T) {
	cases := map[string]struct {
		agent, edited *fixture.AgentWrapper
		wantMsg       string
	}{
		"maxSteps lowered":                 {agent: limitsAgent().MaxSteps(5), edited: limitsAgent().MaxSteps(2), wantMsg: "limit maxSteps (2) reached"},
		"maxSteps lowered then raised":     {agent: limitsAgent().MaxSteps(3), edited: limitsAgent().MaxSteps(50), wantMsg: "limit maxSteps (3) reached"},
		"maxToolCalls lowered":             {agent: limitsAgent().MaxToolCalls(10), edited: limitsAgent().MaxToolCalls(1), wantMsg: "limit maxToolCalls (1) reached"},
		"maxTokens set where none was set": {agent: limitsAgent(), edited: limitsAgent().MaxTokens(20), wantMsg: "limit maxTokens (20) reached"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := pausedUnder(t, tc.agent, limitsRun())
			journaled := h.s.Limits.DeepCopy()
			driveToEnd(t, h, mustEnv(t, tc.edited.Spec(), limitsRun().Spec()))
			if h.s.Reason != exagentv1.ReasonLimitExceeded || !strings.Contains(h.s.Message, tc.wantMsg) {
				t.Fatalf("run %s %s %q, want LimitExceeded %q\n%s", h.s.Phase, h.s.Reason, h.s.Message, tc.wantMsg, strings.Join(h.log, "\n"))
			}
			if diff := cmp.Diff(journaled, h.s.Limits); diff != "" {
				t.Errorf("status.limits changed (-before +after): an edit narrows the run, not its journal\n%s", diff)
			}
		})
	}
}

// TestLimitsOfAnOlderJournal: a run journaled before status.limits
// existed keeps working. Running, it is bound by its Agent's current
// limits (there is nothing else to hold it to) and journals nothing
// outside a claim; at its next claim it journals the Agent's limits as
// they are then, and is held to them from there on.
func TestLimitsOfAnOlderJournal(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		env := mustEnv(t, limitsAgent().MaxSteps(1).Spec(), limitsRun().Spec())
		s := awaitingModel(t, env)
		s.Limits = nil // as an older version left it
		s.Cursor.ModelRequest = nil
		s.Cursor.Step = 1
		got, act, err := Step(s, env, f1, t0)
		if err != nil {
			t.Fatal(err)
		}
		if act.Kind != ActFail || !strings.Contains(got.Message, "limit maxSteps (1) reached") {
			t.Errorf("%s %q, want the Agent's maxSteps in force", describe(act), got.Message)
		}
	})
	t.Run("paused, then claimed", func(t *testing.T) {
		h := pausedUnder(t, limitsAgent().MaxToolCalls(1), limitsRun())
		h.s.Limits = nil // as an older version left it
		raised := mustEnv(t, limitsAgent().MaxToolCalls(2).Spec(), limitsRun().Spec())
		h.env = raised
		h.decide(approveCmd(t, h.s, "p1", "op-1", "alice"))
		h.claim("worker-2")
		want := &exagentv1.RunLimits{MaxToolCalls: new(int32(2)), MaxRuns: new(int32(exagentv1.DefaultMaxRuns)),
			MaxDepth: new(int32(exagentv1.DefaultMaxDepth)), ActiveTime: dur(time.Hour), MaxWait: dur(exagentv1.DefaultMaxWait)}
		if diff := cmp.Diff(want, h.s.Limits); diff != "" {
			t.Fatalf("journaled at the claim (-want +got):\n%s", diff)
		}
		if act := h.step(); act.Kind != ActRunTools {
			t.Fatalf("%s %q, want p1 run under the limits journaled now", describe(act), h.s.Message)
		}
		h.outcome("p1", ResultSucceeded, "paid")
		h.step()
		h.respond(tools(call("s2", "search", `{"q":"y"}`)))
		// The Agent raised once more: the run holds the 2 it journaled.
		h.env = mustEnv(t, limitsAgent().MaxToolCalls(9).Spec(), limitsRun().Spec())
		if act := h.step(); act.Kind != ActFail || !strings.Contains(h.s.Message, "limit maxToolCalls (2) reached") {
			t.Fatalf("%s %q, want the journaled maxToolCalls (2)", describe(act), h.s.Message)
		}
	})
}

// TestActiveTimeLeft is what the controller bounds dispatched IO by: the
// owner's reservation less what it used since its claim or checkpoint,
// by the journaled limit when the Agent's is raised; none without a
// limit or an owner.
func TestActiveTimeLeft(t *testing.T) {
	tenMin := mustEnv(t, limitsAgent().ActiveTime("10m").Spec(), limitsRun().ActiveTimeLimit(exagentv1.Never).Spec())
	never := mustEnv(t, limitsAgent().Spec(), limitsRun().ActiveTimeLimit(exagentv1.Never).Spec())
	cases := map[string]struct {
		s      Status
		env    *Env
		at     time.Duration
		want   time.Duration
		wantOK bool
	}{
		"fresh claim":                            {s: running(t, tenMin), env: tenMin, at: 0, want: 10 * time.Minute, wantOK: true},
		"part used":                              {s: running(t, tenMin), env: tenMin, at: 4 * time.Minute, want: 6 * time.Minute, wantOK: true},
		"used up":                                {s: running(t, tenMin), env: tenMin, at: time.Hour, want: 0, wantOK: true},
		"no limit":                               {s: running(t, never), env: never, at: time.Minute, wantOK: false},
		"no owner":                               {s: queued(t, tenMin), env: tenMin, wantOK: false},
		"the journal, the Agent's limit removed": {s: running(t, tenMin), env: never, at: 4 * time.Minute, want: 6 * time.Minute, wantOK: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ActiveTimeLeft(tc.s, tc.env, t0.Add(tc.at))
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ActiveTimeLeft = %s, %v; want %s, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
