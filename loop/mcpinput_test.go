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
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestInputRequestsHostile: what a server asks is untrusted; every way it
// can ask for too much, or for what no person answers, fails the call
// with MCPInputRefused and the reason, never a pause.
func TestInputRequestsHostile(t *testing.T) {
	env := mustEnv(t, MakeAgent().Tool(exagentv1.ToolSpec{Name: "srv", MCP: &exagentv1.MCPTool{URL: "http://127.0.0.1/mcp"}}).Spec(), MakeRun().Spec())
	form := func(schema string) string {
		return `{"q":{"method":"elicitation/create","params":{"message":"m","requestedSchema":` + schema + `}}}`
	}
	many := map[string]any{}
	for i := 0; i < 9; i++ {
		many[strings.Repeat("k", i+1)] = map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "m", "mode": "url", "url": "https://x.example"}}
	}
	manyJSON, _ := json.Marshal(many)
	cases := []struct {
		name, requests, state, want string
	}{
		{"sampling without messages", `{"llm":{"method":"sampling/createMessage","params":{"maxTokens":5}}}`, "", `sampling request llm has no messages`},
		{"roots", `{"r":{"method":"roots/list","params":{}}}`, "", `"roots/list"`},
		{"nested object", form(`{"type":"object","properties":{"a":{"type":"object"}}}`), "", "outside MCP's restricted subset"},
		{"array of objects", form(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object"}}}}`), "", "array of something other than an enum"},
		{"not an object schema", form(`{"type":"string"}`), "", `must be an object schema`},
		{"remote ref", form(`{"type":"object","properties":{"a":{"type":"string","$ref":"https://evil.example/s.json"}}}`), "", "not a usable JSON Schema"},
		{"javascript url", `{"u":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"javascript:alert(1)"}}}`, "", "is not an absolute http(s) URL"},
		{"url with a space", `{"u":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://a.example/ x"}}}`, "", "is not an absolute http(s) URL"},
		{"no message", `{"u":{"method":"elicitation/create","params":{"mode":"url","url":"https://a.example"}}}`, "", "has no message"},
		{"empty", `{}`, "", "no input requests"},
		{"too many", string(manyJSON), "", "more than 8"},
		{"huge state", form(`{"type":"object","properties":{}}`), strings.Repeat("s", maxInputRequests+1), "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := exagentv1.ToolCall{ID: "c1", Tool: "srv", State: exagentv1.CallStarted}
			recordInputRequired(&c, env, ToolResult{CallID: "c1", Kind: ResultInputRequired, InputRequests: json.RawMessage(tc.requests), RequestState: tc.state})
			if c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, "MCPInputRefused") ||
				!strings.Contains(c.Outcome.Result, tc.want) {
				t.Fatalf("call %s %+v, want Failed with MCPInputRefused and %q", c.State, c.Outcome, tc.want)
			}
		})
	}
	t.Run("rounds are bounded", func(t *testing.T) {
		c := exagentv1.ToolCall{ID: "c1", Tool: "srv", State: exagentv1.CallStarted, Input: &exagentv1.CallInput{Round: defaultMaxInputRounds}}
		recordInputRequired(&c, env, ToolResult{CallID: "c1", Kind: ResultInputRequired, InputRequests: json.RawMessage(form(`{"type":"object"}`))})
		if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "more than mcp.maxInputRounds (5)") {
			t.Fatalf("round 6: %s %+v", c.State, c.Outcome)
		}
	})
}

func TestURLOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://auth.example.com/consent?x=1":  "https://auth.example.com",
		"http://user:pw@evil.example:8080/path": "http://evil.example:8080",
		"https://a.example#frag":                "https://a.example",
		"javascript:alert(1)":                   "",
		"https:///nohost":                       "",
		"https://a.example/\nx":                 "",
	} {
		if got := exagentv1.URLOrigin(in); got != want {
			t.Errorf("URLOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMCPSamplingDenyRechecked: a sampling request journaled while the
// tool's mcp.sampling allowed it is served only while the current Agent
// still does. Once the Agent says Deny — before the request is sent,
// after a person approved it under Ask, after the owner died with it out,
// or after the run's model answered it but before the call is retried
// with the answer — the call fails MCPInputRefused saying why, no
// sampling request is sent and the server is not called again.
func TestMCPSamplingDenyRechecked(t *testing.T) {
	deny := samplingEnv(t, exagentv1.SamplingDeny)
	cases := map[string]struct {
		// journal brings the run to where the Agent is edited.
		journal    func(t *testing.T) *harness
		wantAnswer string
	}{
		"Allow, edited before the request is sent": {
			journal: func(t *testing.T) *harness {
				return sampledOn(t, samplingEnv(t, exagentv1.SamplingAllow), samplingRequests)
			},
			wantAnswer: "not sent to the run's model",
		},
		"Allow, edited while the request was out and its owner died": {
			journal: func(t *testing.T) *harness {
				env := samplingEnv(t, exagentv1.SamplingAllow)
				h := sampledOn(t, env, samplingRequests)
				if act := h.step(); act.Kind != ActCallModel || !act.Model.Sampling {
					t.Fatalf("first: %s, want the sampling request", describe(act))
				}
				return h.advance(env.lease + 1).recover().claim("worker-2")
			},
			wantAnswer: "not sent to the run's model",
		},
		"Allow, edited after the model answered, before the retry": {
			journal: func(t *testing.T) *harness {
				h := sampledOn(t, samplingEnv(t, exagentv1.SamplingAllow), samplingRequests)
				h.step()
				h.respond(ModelResponse{Content: "A printer is on fire."})
				if c := h.s.Calls[0]; c.State != exagentv1.CallApproved || c.Input.Responses == "" {
					t.Fatalf("call %s, want Approved with the sample to be retried", c.State)
				}
				return h
			},
			wantAnswer: "journaled answer was not sent back",
		},
		"Ask, edited after a person approved it": {
			journal: func(t *testing.T) *harness {
				h := sampledOn(t, samplingEnv(t, exagentv1.SamplingAsk), samplingRequests)
				if act := h.step(); act.Kind != ActPause {
					t.Fatalf("Ask: %s, want a pause", describe(act))
				}
				d := approveCmd(t, h.s, "c1", "op-1", "alice")
				d.Decision, d.Answer = exagentv1.DecisionAnswer, `"approve"`
				h.decide(d)
				return h.claim("worker-2")
			},
			wantAnswer: "not sent to the run's model",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := tc.journal(t)
			requests := h.s.Ledger.Requests
			h.env = deny // the Agent now says Deny
			act := h.step()
			if act.Kind == ActRunTools || act.Kind == ActCallModel && act.Model.Sampling {
				t.Fatalf("after the edit: %s, want neither the sampling request nor the call's retry", describe(act))
			}
			c := h.s.Calls[0]
			if c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, exagentv1.ReasonMCPInputRefused) ||
				!strings.Contains(c.Outcome.Result, "now sets mcp.sampling Deny") || !strings.Contains(c.Outcome.Result, tc.wantAnswer) {
				t.Fatalf("call %s %+v, want Failed MCPInputRefused saying the Agent now denies sampling and %q", c.State, c.Outcome, tc.wantAnswer)
			}
			if act.Kind != ActCallModel || h.s.Ledger.Requests != requests+1 || h.s.Cursor.Step != 1 {
				t.Fatalf("after the refusal: %s, requests %d (was %d), step %d: want the batch closed and the model's next turn asked",
					describe(act), h.s.Ledger.Requests, requests, h.s.Cursor.Step)
			}
			if last := h.s.History[len(h.s.History)-1]; last.Role != exagentv1.RoleTool || !strings.Contains(last.Content, "now sets mcp.sampling Deny") {
				t.Errorf("the model reads %+v, want the refusal", last)
			}
		})
	}
}
