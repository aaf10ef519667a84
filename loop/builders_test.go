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
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// t0 is the fixed instant every test starts from; time is always passed in.
var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

const runUID = "uid-1"

// MakeAgent and MakeRun are where the engine's fixtures start: the shared
// vocabulary (internal/testing/fixture) with the engine's defaults — an
// Agent with instructions and a one-turn script, and a run of it stamped
// with a requester and an hour of active time (most tests exercise the
// accounting; unset, no limit, is tested on its own). The engine reads
// only their specs (Spec()).
func MakeAgent() *fixture.AgentWrapper {
	return fixture.MakeAgent("agent", "ns").Instructions("You are helpful.").Script(fixture.TextTurn("x"))
}

func MakeRun() *fixture.RunWrapper {
	return fixture.MakeRun("run", "ns").RequestedBy("requester").ActiveTimeLimit("1h")
}

// mustEnv builds an Env or fails the test.
func mustEnv(t testing.TB, agent *exagentv1.AgentSpec, run *exagentv1.AgentRunSpec) *Env {
	t.Helper()
	env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", Agent: agent, AgentGeneration: 1, Run: run})
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return env
}

// defaultEnv: two http tools, search allowed, pay asks.
func defaultEnv(t testing.TB) *Env {
	return mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), MakeRun().Spec())
}

// call is a model tool call.
func call(id, name, args string) exagentv1.MessageToolCall {
	return exagentv1.MessageToolCall{ID: id, Name: name, Arguments: args}
}

// text is a model answer without tool calls.
func text(s string) ModelResponse {
	return ModelResponse{Content: s, PromptTokens: 10, CompletionTokens: 5}
}

// tools is a model answer asking for calls.
func tools(calls ...exagentv1.MessageToolCall) ModelResponse {
	return ModelResponse{ToolCalls: calls, PromptTokens: 10, CompletionTokens: 5}
}

// actor is a decider.
func actor(name string) exagentv1.Actor { return exagentv1.Actor{Username: name} }

// mustJSON encodes v for comparisons.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
