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
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// pendingQuestions are the run's pending questions, in request order.
func pendingQuestions(run *exagentv1.AgentRun) []exagentv1.Approval {
	var out []exagentv1.Approval
	for _, a := range run.Status.Pending() {
		if a.IsQuestion() {
			out = append(out, a)
		}
	}
	return out
}

// TestMCPInputRequests runs Agents whose MCP tools answer tools/call with
// MCP 2026-07-28 input requests (the SDK's server, stateless, on
// 127.0.0.1): the call pauses durably as questions, the answers go back
// with the server's requestState and the same idempotency key, and the
// effect runs once; a server that asks twice gets two rounds; sampling is
// answered by the run's own model (one model request, charged once),
// refused under mcp.sampling Deny, approved by a person first under Ask.
func TestMCPInputRequests(t *testing.T) {
	h := newHarness(t)
	h.mcpSecret()
	h.startManager(controllers.Options{})
	allow := exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}

	t.Run("a form: the answer reaches the server with its requestState; the effect runs once", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.StartStateless()
		defer srv.Close()
		h.createAgent("form", mcpAgent(srv, "form", nil, allow, fixture.CallTurn("c1", "form", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("form", "form")
		paused := h.waitPhase("form", exagentv1.PhaseAwaitingApproval)
		qs := pendingQuestions(paused)
		if len(qs) != 1 || qs[0].Question.Source != exagentv1.QuestionMCPElicitation || qs[0].Question.Text != "Which region?" ||
			!strings.Contains(qs[0].Question.Schema, `"enum":["eu","us"]`) {
			t.Fatalf("questions %+v, want the server's form", qs)
		}
		if c := paused.Status.Call("c1"); c.State != exagentv1.CallPending || c.Input == nil || c.Input.Round != 1 || c.Input.RequestState != "st-1" {
			t.Fatalf("call %+v, want Pending with round 1 and the server's state journaled", c)
		}
		h.decide(alice, h.decision("form", "a1").Answer(qs[0], `{"region":"eu"}`, "").Reason("eu it is"))
		done := h.waitPhase("form", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "form: region=eu action=accept state=st-1" {
			t.Fatalf("call = %s %q", st, out)
		}
		calls := srv.Calls("form")
		if len(calls) != 2 || calls[1].RequestState != "st-1" || calls[1].InputRound != 1 || calls[0].MetaKey != calls[1].MetaKey {
			t.Fatalf("the server saw %+v, want the call and one retry with the state, the round and the same key", calls)
		}
	})

	t.Run("a URL: shown, never fetched; declined goes back to the server as decline", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.StartStateless()
		defer srv.Close()
		h.createAgent("visit", mcpAgent(srv, "visit", nil, allow, fixture.CallTurn("c1", "visit", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("visit", "visit")
		paused := h.waitPhase("visit", exagentv1.PhaseAwaitingApproval)
		qs := pendingQuestions(paused)
		if len(qs) != 1 || qs[0].Question.Source != exagentv1.QuestionMCPElicitationURL || qs[0].Question.URL != "https://auth.example.com/consent?app=mcptest" {
			t.Fatalf("questions %+v, want the URL", qs)
		}
		h.decide(alice, h.decision("visit", "d1").Answer(qs[0], "", exagentv1.AnswerDecline).Reason("not now"))
		done := h.waitPhase("visit", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "visit: decline" {
			t.Fatalf("call = %s %q", st, out)
		}
	})

	t.Run("two rounds, then the effect", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.StartStateless()
		defer srv.Close()
		h.createAgent("twice", mcpAgent(srv, "twice", nil, allow, fixture.CallTurn("c1", "twice", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("twice", "twice")
		first := h.waitPhase("twice", exagentv1.PhaseAwaitingApproval)
		h.decide(alice, h.decision("twice", "a").Answer(pendingQuestions(first)[0], `{"v":"x"}`, ""))
		second := h.waitRun("twice", "the second round's question", func(r *exagentv1.AgentRun) bool {
			qs := pendingQuestions(r)
			return r.Status.Phase == exagentv1.PhaseAwaitingApproval && len(qs) == 1 && qs[0].Question.Text == "Second?"
		})
		if c := second.Status.Call("c1"); c.Input == nil || c.Input.Round != 2 {
			t.Fatalf("call input %+v, want round 2", c.Input)
		}
		h.decide(alice, h.decision("twice", "b").Answer(pendingQuestions(second)[0], `{"v":"y"}`, ""))
		done := h.waitPhase("twice", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "twice: t-2:x then y" {
			t.Fatalf("call = %s %q", st, out)
		}
		if n := len(srv.Calls("twice")); n != 3 {
			t.Errorf("the server saw %d calls, want 3 (one per round)", n)
		}
	})

	t.Run("sampling: the run's model answers, one extra model request charged once", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.StartStateless()
		defer srv.Close()
		h.createAgent("sample", mcpAgent(srv, "sample", nil, allow, fixture.CallTurn("c1", "sample", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("sample", "sample")
		done := h.waitPhase("sample", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "sample: sampled: hi state=s-1" {
			t.Fatalf("call = %s %q, want the server's tool completed with the run's model's answer", st, out)
		}
		if n := done.Status.Ledger.Requests; n != 3 {
			t.Errorf("ledger requests %d, want 3: two turns and the sampling request, each charged once", n)
		}
		if c := done.Status.Call("c1"); c.Input == nil || !strings.Contains(c.Input.Samples, "sampled: hi") {
			t.Errorf("call input %+v, want the sample journaled", c.Input)
		}
		if n := len(srv.Calls("sample")); n != 2 {
			t.Errorf("the server saw %d calls, want 2 (the first and the retry)", n)
		}
	})

	t.Run("sampling Deny: refused with the reason; the model is told", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.StartStateless()
		defer srv.Close()
		deny := func(m *exagentv1.MCPTool) { m.Sampling = exagentv1.SamplingDeny }
		h.createAgent("nosample", mcpAgent(srv, "sample", deny, allow, fixture.CallTurn("c1", "sample", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("nosample", "nosample")
		done := h.waitPhase("nosample", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallFailed || !strings.Contains(out, "MCPInputRefused") ||
			!strings.Contains(out, "mcp.sampling Deny") {
			t.Fatalf("call = %s %q, want Failed with MCPInputRefused naming mcp.sampling Deny", st, out)
		}
		if n := done.Status.Ledger.Requests; n != 2 {
			t.Errorf("ledger requests %d, want 2: no sampling request", n)
		}
	})

	t.Run("sampling Ask: a person approves the request, then the run's model answers", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.StartStateless()
		defer srv.Close()
		ask := func(m *exagentv1.MCPTool) { m.Sampling = exagentv1.SamplingAsk }
		h.createAgent("asksample", mcpAgent(srv, "sample", ask, allow, fixture.CallTurn("c1", "sample", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("asksample", "asksample")
		paused := h.waitPhase("asksample", exagentv1.PhaseAwaitingApproval)
		qs := pendingQuestions(paused)
		if len(qs) != 1 || qs[0].Question.Source != exagentv1.QuestionMCPSampling || !strings.Contains(qs[0].Question.Text, "hi") {
			t.Fatalf("questions %+v, want the sampling request shown", qs)
		}
		if n := paused.Status.Ledger.Requests; n != 1 {
			t.Errorf("ledger requests %d while asking, want 1: nothing sampled before the approval", n)
		}
		h.decide(alice, h.decision("asksample", "s1").Answer(qs[0], `"approve"`, ""))
		done := h.waitPhase("asksample", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "sample: sampled: hi state=s-1" {
			t.Fatalf("call = %s %q", st, out)
		}
	})
}
