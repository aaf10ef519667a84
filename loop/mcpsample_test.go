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
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// samplingRequests is a server's round asking the client's model once.
const samplingRequests = `{"llm":{"method":"sampling/createMessage","params":{"maxTokens":50000,"systemPrompt":"Be brief.",` +
	`"messages":[{"role":"user","content":{"type":"text","text":"Summarise the ticket."}}],"includeContext":"allServers"}}}`

func samplingEnv(t testing.TB, policy exagentv1.MCPSamplingPolicy, edits ...func(*exagentv1.Agent)) *Env {
	t.Helper()
	a := MakeAgent().Tool(exagentv1.ToolSpec{Name: "srv", MCP: &exagentv1.MCPTool{URL: "http://127.0.0.1/mcp", Sampling: policy}}).
		Default(exagentv1.PolicyAllow).Apply(edits...)
	env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", Agent: a.Spec(), AgentGeneration: 1, Run: MakeRun().ActiveTimeLimit(exagentv1.Never).Spec(),
		MCP: map[string]*MCPListing{"srv": mcpListing(MCPToolInfo{Name: "srv", InputSchema: json.RawMessage(`{"type":"object"}`)})}})
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return env
}

// sampledOn runs one call of srv whose server answers with requests.
func sampledOn(t testing.TB, env *Env, requests string) *harness {
	t.Helper()
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("c1", "srv", `{}`)))
	if act := h.step(); act.Kind != ActRunTools {
		t.Fatalf("first: %s, want the call run", describe(act))
	}
	h.must("RecordOutcome input_required", func() error {
		s, err := RecordOutcome(h.s, env, h.f, ToolResult{CallID: "c1", Kind: ResultInputRequired,
			InputRequests: json.RawMessage(requests), RequestState: "st-1"}, h.now)
		h.s = s
		return err
	})
	return h
}

// TestMCPSamplingAllow: the run's model answers the server's sampling
// request as a model request of its own — the server's messages only
// (system prompt first, no transcript, no tools), its maxTokens capped —
// charged once; the call is then retried with the answer as MCP's
// CreateMessageResult, with the same requestState.
func TestMCPSamplingAllow(t *testing.T) {
	env := samplingEnv(t, "")
	h := sampledOn(t, env, samplingRequests)
	before := h.s.Ledger.Requests
	act := h.step()
	if act.Kind != ActCallModel || !act.Model.Sampling || len(act.Model.Tools) != 0 {
		t.Fatalf("after input_required: %s, want a sampling request", describe(act))
	}
	if m := act.Model.Messages; len(m) != 2 || m[0].Role != exagentv1.RoleSystem || m[0].Content != "Be brief." ||
		m[1].Content != "Summarise the ticket." {
		t.Fatalf("sampling messages %+v, want the server's system prompt and message only", m)
	}
	if act.Model.MaxTokens != defaultSamplingTokens {
		t.Errorf("maxTokens %d, want the server's 50000 capped at %d", act.Model.MaxTokens, defaultSamplingTokens)
	}
	if h.s.Ledger.Requests != before+1 || h.s.Cursor.ModelRequest == nil || h.s.Cursor.ModelRequest.CallID != "c1" ||
		h.s.Cursor.ModelRequest.InputRequest != "llm" {
		t.Fatalf("intent %+v, requests %d: want the sampling request charged and journaled first", h.s.Cursor.ModelRequest, h.s.Ledger.Requests)
	}
	if again := h.step(); again.Kind != ActWait {
		t.Fatalf("while it is outstanding: %s, want Wait", describe(again))
	}
	h.respond(ModelResponse{Content: "A printer is on fire.", PromptTokens: 30, CompletionTokens: 6})
	c := h.s.Calls[0]
	if c.State != exagentv1.CallApproved || c.Input == nil {
		t.Fatalf("call %s, want Approved to be retried", c.State)
	}
	var resp map[string]map[string]any
	if err := json.Unmarshal([]byte(c.Input.Responses), &resp); err != nil || resp["llm"]["role"] != "assistant" ||
		resp["llm"]["content"].(map[string]any)["text"] != "A printer is on fire." {
		t.Fatalf("responses %s (%v), want the CreateMessageResult", c.Input.Responses, err)
	}
	if h.s.Ledger.Requests != before+1 || tokensUsed(&h.s) < 36 {
		t.Errorf("ledger %+v, want one request and its tokens charged", h.s.Ledger)
	}
	act = h.step()
	if act.Kind != ActRunTools || act.Calls[0].RequestState != "st-1" || !strings.Contains(string(act.Calls[0].InputResponses), "printer") {
		t.Fatalf("retry: %s %+v, want the call retried with the answer and the state", describe(act), act.Calls)
	}
	if h.s.Ledger.Requests != before+1 {
		t.Errorf("requests %d after the retry, want %d: the sample is charged once", h.s.Ledger.Requests, before+1)
	}
}

// TestMCPSamplingLost: an owner that dies with the sampling request out
// is followed by one that re-sends it, charged again (as any model
// request whose answer was lost), at most maxModelResends times.
func TestMCPSamplingLost(t *testing.T) {
	env := samplingEnv(t, exagentv1.SamplingAllow)
	h := sampledOn(t, env, samplingRequests)
	h.step()
	first := h.s.Ledger.Requests
	h.advance(env.lease + 1).recover().claim("worker-2")
	act := h.step()
	if act.Kind != ActCallModel || !act.Model.Sampling || h.s.Ledger.Requests != first+1 || h.s.Cursor.ModelResends != 1 {
		t.Fatalf("after the owner died: %s, requests %d, resends %d: want the sampling request re-sent and charged again",
			describe(act)+" "+h.s.Message, h.s.Ledger.Requests, h.s.Cursor.ModelResends)
	}
	for i := 0; i < maxModelResends; i++ {
		h.advance(env.lease + 1).recover().claim("worker-x")
		act = h.step()
	}
	if act.Kind != ActFail || h.s.Reason != exagentv1.ReasonModelRequestRetriesExhausted {
		t.Fatalf("after %d losses: %s %s, want the run Failed", maxModelResends+1, describe(act), h.s.Reason)
	}
}

// TestMCPSamplingAsk: under mcp.sampling Ask a person approves the request
// first (a question of source MCPSampling); a decline fails the call with
// who declined, and no model request is sent.
func TestMCPSamplingAsk(t *testing.T) {
	env := samplingEnv(t, exagentv1.SamplingAsk)
	ask := func(t *testing.T) (*harness, exagentv1.Approval) {
		h := sampledOn(t, env, samplingRequests)
		requests := h.s.Ledger.Requests
		if act := h.step(); act.Kind != ActPause || h.s.Ledger.Requests != requests {
			t.Fatalf("Ask: %s, want a pause before any model request", describe(act))
		}
		q := h.s.Approvals[0]
		if !q.IsQuestion() || q.Question.Source != exagentv1.QuestionMCPSampling || !strings.Contains(q.Question.Text, "Summarise the ticket.") ||
			!strings.Contains(q.Question.Text, "at most 4096 tokens") {
			t.Fatalf("question %+v, want the sampling request shown", q.Question)
		}
		return h, q
	}
	t.Run("approve", func(t *testing.T) {
		h, _ := ask(t)
		d := approveCmd(t, h.s, "c1", "op-1", "alice")
		d.Decision, d.Answer = exagentv1.DecisionAnswer, `"approve"`
		h.decide(d)
		if h.s.Phase != exagentv1.PhaseApproved || h.s.Calls[0].State != exagentv1.CallPending {
			t.Fatalf("after approval: %s, call %s; want the run Approved, the call waiting for its sample", h.s.Phase, h.s.Calls[0].State)
		}
		h.claim("worker-2")
		if act := h.step(); act.Kind != ActCallModel || !act.Model.Sampling {
			t.Fatalf("after approval: %s, want the sampling request sent", describe(act))
		}
		h.respond(ModelResponse{Content: "ok"})
		if h.s.Calls[0].State != exagentv1.CallApproved {
			t.Fatalf("call %s after the sample, want Approved", h.s.Calls[0].State)
		}
	})
	t.Run("other answers are refused", func(t *testing.T) {
		h, _ := ask(t)
		d := approveCmd(t, h.s, "c1", "op-1", "alice")
		d.Decision, d.Answer = exagentv1.DecisionAnswer, `"sure"`
		if _, _, err := Answer(h.s, env, d, t0); !IsKind(err, KindConflict) {
			t.Fatalf("answer %q: %v, want a conflict", d.Answer, err)
		}
	})
	t.Run("decline", func(t *testing.T) {
		h, _ := ask(t)
		d := approveCmd(t, h.s, "c1", "op-1", "bob")
		d.Decision, d.Action = exagentv1.DecisionAnswer, exagentv1.AnswerDecline
		h.decide(d)
		c := h.s.Calls[0]
		if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "bob declined") {
			t.Fatalf("call %s %+v, want Failed saying who declined", c.State, c.Outcome)
		}
	})
}

// TestMCPSamplingRefused: Deny, and every request exagent will not send
// to the run's model, fail the call with MCPInputRefused and the reason.
func TestMCPSamplingRefused(t *testing.T) {
	msg := func(content string) string {
		return `{"s":{"method":"sampling/createMessage","params":{"maxTokens":10,"messages":[{"role":"user","content":` + content + `}]}}}`
	}
	many := make([]string, maxSamplingMessages+1)
	for i := range many {
		many[i] = `{"role":"user","content":{"type":"text","text":"x"}}`
	}
	cases := []struct {
		name     string
		policy   exagentv1.MCPSamplingPolicy
		requests string
		want     string
	}{
		{"deny", exagentv1.SamplingDeny, samplingRequests, "mcp.sampling Deny"},
		{"no messages", "", `{"s":{"method":"sampling/createMessage","params":{"maxTokens":10}}}`, "has no messages"},
		{"no maxTokens", "", `{"s":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"x"}}]}}}`, "maxTokens must be positive"},
		{"image", "", msg(`{"type":"image","data":"AAAA","mimeType":"image/png"}`), `content of type "image"`},
		{"tool use", "", msg(`[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"x","input":{}}]`), `content of type "tool_use"`},
		{"system role", "", `{"s":{"method":"sampling/createMessage","params":{"maxTokens":10,"messages":[{"role":"system","content":{"type":"text","text":"x"}}]}}}`, `role "system"`},
		{"too many messages", "", `{"s":{"method":"sampling/createMessage","params":{"maxTokens":10,"messages":[` + strings.Join(many, ",") + `]}}}`, "more than 32"},
		{"roots", "", `{"r":{"method":"roots/list","params":{}}}`, `"roots/list"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := samplingEnv(t, tc.policy)
			c := exagentv1.ToolCall{ID: "c1", Tool: "srv", State: exagentv1.CallStarted}
			recordInputRequired(&c, env, ToolResult{CallID: "c1", Kind: ResultInputRequired, InputRequests: json.RawMessage(tc.requests)})
			if c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, "MCPInputRefused") ||
				!strings.Contains(c.Outcome.Result, tc.want) {
				t.Fatalf("call %s %+v, want Failed with MCPInputRefused and %q", c.State, c.Outcome, tc.want)
			}
		})
	}
}

// TestMCPSamplingLimits: the Agent's limits hold before a sampling request
// is sent, and the model's maxCompletionTokens caps the server's maxTokens.
func TestMCPSamplingLimits(t *testing.T) {
	small := int64(64)
	env := samplingEnv(t, "", func(a *exagentv1.Agent) { a.Spec.Model.MaxCompletionTokens = &small })
	h := sampledOn(t, env, samplingRequests)
	if act := h.step(); act.Kind != ActCallModel || act.Model.MaxTokens != 64 {
		t.Fatalf("%s maxTokens %d, want the model's 64", describe(act), act.Model.MaxTokens)
	}
	env = samplingEnv(t, "", func(a *exagentv1.Agent) { n := int64(1000); a.Spec.Limits.MaxTokens = &n })
	h = sampledOn(t, env, samplingRequests)
	h.s.Ledger.PromptTokens = 1000 // spent by the turns so far
	if act := h.step(); act.Kind != ActFail || h.s.Reason != exagentv1.ReasonLimitExceeded {
		t.Fatalf("%s %s, want LimitExceeded before the sampling request", describe(act), h.s.Reason)
	}
}

// samplingRounds drives a run whose server (sampledOn) asks for a new
// completion each time its call is retried, rounds times in all, then
// answers; the model always answers a sampling request and ends the run
// once it reads the call. It returns how many sampling requests were sent.
func samplingRounds(t *testing.T, h *harness, rounds int) int {
	t.Helper()
	sent, round := 0, 1
	for i := 0; i < 100 && !h.s.Phase.IsTerminal(); i++ {
		switch act := h.step(); {
		case act.Kind == ActCallModel && act.Model.Sampling:
			sent++
			h.respond(ModelResponse{Content: "a summary", PromptTokens: 3, CompletionTokens: 2})
		case act.Kind == ActCallModel:
			h.respond(text("done"))
		case act.Kind == ActRunTools && round < rounds:
			round++
			req := strings.Replace(samplingRequests, `"llm"`, fmt.Sprintf(`"s%d"`, round), 1)
			h.must("RecordOutcome input_required", func() error {
				s, err := RecordOutcome(h.s, h.env, h.f, ToolResult{CallID: "c1", Kind: ResultInputRequired,
					InputRequests: json.RawMessage(req), RequestState: "st"}, h.now)
				h.s = s
				return err
			})
		case act.Kind == ActRunTools:
			h.outcome("c1", ResultSucceeded, "answered")
		}
	}
	return sent
}

// TestMCPSamplingCountsAgainstMaxSteps: a sampling request is a model
// request of the run: it counts against maxSteps (the run's own, or what
// its parent reserved for it), and one request is always kept for the
// run to read its call. A sampling request past that is refused — the
// call fails LimitExceeded and the model is told — and the run never
// makes more model requests than maxSteps, however often its server asks.
func TestMCPSamplingCountsAgainstMaxSteps(t *testing.T) {
	child := func(r *exagentv1.AgentRun) {
		r.Spec.Delegation = &exagentv1.Delegation{
			Parent: exagentv1.RunReference{Name: "p", UID: "p-uid"}, Root: exagentv1.RunReference{Name: "p", UID: "p-uid"},
			CallID: "d1", Ancestry: []string{"p-uid/d1"}, Limits: exagentv1.DelegatedLimits{MaxSteps: new(int32(2))},
		}
	}
	cases := map[string]struct {
		maxSteps    int32 // the Agent's; 0: unset
		run         func(*exagentv1.AgentRun)
		rounds      int
		wantSent    int
		wantRefused bool
	}{
		"maxSteps 2: none, one request kept to read the call": {maxSteps: 2, rounds: 3, wantSent: 0, wantRefused: true},
		"maxSteps 4: a server that keeps asking":              {maxSteps: 4, rounds: 10, wantSent: 2, wantRefused: true},
		"maxSteps 10: every one":                              {maxSteps: 10, rounds: 3, wantSent: 3},
		"a child: what its parent reserved (2)":               {run: child, rounds: 3, wantSent: 0, wantRefused: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := MakeAgent().Tool(exagentv1.ToolSpec{Name: "srv", MCP: &exagentv1.MCPTool{URL: "http://127.0.0.1/mcp"}}).
				Default(exagentv1.PolicyAllow)
			if tc.maxSteps > 0 {
				a.MaxSteps(tc.maxSteps)
			}
			run := MakeRun().ActiveTimeLimit(exagentv1.Never)
			if tc.run != nil {
				run.Apply(tc.run)
			}
			env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", Agent: a.Spec(), AgentGeneration: 1, Run: run.Spec(),
				MCP: map[string]*MCPListing{"srv": mcpListing(MCPToolInfo{Name: "srv", InputSchema: json.RawMessage(`{"type":"object"}`)})}})
			if err != nil {
				t.Fatal(err)
			}
			h := sampledOn(t, env, samplingRequests)
			sent := samplingRounds(t, h, tc.rounds)
			limit := int64(tc.maxSteps)
			if limit == 0 {
				limit = 2
			}
			if sent != tc.wantSent || h.s.Ledger.Requests > limit || h.s.Ledger.SamplingRequests != int64(sent) {
				t.Errorf("sent %d sampling requests, %d model requests in all (ledger %+v); want %d sent, at most %d in all\n%s",
					sent, h.s.Ledger.Requests, h.s.Ledger, tc.wantSent, limit, strings.Join(h.log, "\n"))
			}
			c := h.s.Calls[0]
			refused := c.State == exagentv1.CallFailed && c.Outcome != nil && strings.Contains(c.Outcome.Result, "LimitExceeded") &&
				strings.Contains(c.Outcome.Result, "maxSteps")
			if refused != tc.wantRefused {
				t.Errorf("call %s %+v: refused %v, want %v", c.State, c.Outcome, refused, tc.wantRefused)
			}
			if h.s.Phase != exagentv1.PhaseSucceeded {
				t.Errorf("run %s %s %q, want Succeeded: the model read the call", h.s.Phase, h.s.Reason, h.s.Message)
			}
		})
	}
}

// TestMCPSamplingWithinTheReservation: what the run's live children hold
// counts before a sampling request as before any model request — model
// requests against maxSteps, tokens against maxTokens — and the request's
// maxTokens is at most the tokens left, so a server cannot spend what
// the run reserved for its children (and through them its ancestors).
func TestMCPSamplingWithinTheReservation(t *testing.T) {
	env := samplingEnv(t, "", func(a *exagentv1.Agent) {
		a.Spec.Limits.MaxSteps, a.Spec.Limits.MaxTokens = new(int32(5)), new(int64(1000))
	})
	holding := func(h *harness, steps int32, tokens int64) {
		h.s.Children = append(h.s.Children, exagentv1.ChildRun{Name: "run-child", CallID: "d0", Agent: "other",
			Reserved: &exagentv1.DelegatedLimits{MaxSteps: &steps, MaxTokens: &tokens}})
	}
	t.Run("tokens left cap the request", func(t *testing.T) {
		h := sampledOn(t, env, samplingRequests)
		holding(h, 2, 900)
		act := h.step()
		if act.Kind != ActCallModel || !act.Model.Sampling || act.Model.MaxTokens != 1000-15-900 {
			t.Fatalf("%s maxTokens %d, want a sampling request of at most the %d tokens left", describe(act), act.Model.MaxTokens, 1000-15-900)
		}
	})
	t.Run("no tokens left", func(t *testing.T) {
		h := sampledOn(t, env, samplingRequests)
		holding(h, 0, 985)
		if act := h.step(); act.Kind != ActFail || h.s.Reason != exagentv1.ReasonLimitExceeded || !strings.Contains(h.s.Message, "985 held by child runs") {
			t.Fatalf("%s %s %q, want LimitExceeded counting what the child holds", describe(act), h.s.Reason, h.s.Message)
		}
	})
	t.Run("no model request left", func(t *testing.T) {
		h := sampledOn(t, env, samplingRequests)
		holding(h, 3, 0) // 1 made + 3 held + 1 kept = 5
		act := h.step()
		if act.Kind == ActCallModel || h.s.Ledger.SamplingRequests != 0 {
			t.Fatalf("%s, want no sampling request", describe(act))
		}
		if c := h.s.Calls[0]; c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "3 reserved for child runs") {
			t.Fatalf("call %s %+v, want it refused counting what the child holds", c.State, c.Outcome)
		}
	})
}
