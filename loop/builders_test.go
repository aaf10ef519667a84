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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// t0 is the fixed instant every test starts from; time is always passed in.
var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

const runUID = "uid-1"

// AgentWrapper builds an AgentSpec fluently.
type AgentWrapper struct{ exagentv1.AgentSpec }

func MakeAgent() *AgentWrapper {
	return &AgentWrapper{exagentv1.AgentSpec{
		Instructions: "You are helpful.",
		Model:        exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted, Script: []exagentv1.ScriptTurn{{Text: "x"}}},
	}}
}

func (w *AgentWrapper) Instructions(s string) *AgentWrapper { w.AgentSpec.Instructions = s; return w }

// HTTPTool adds an http tool with an object schema.
func (w *AgentWrapper) HTTPTool(name string, idempotent bool) *AgentWrapper {
	w.Tools = append(w.Tools, exagentv1.ToolSpec{
		Name: name, Description: name + " tool",
		Parameters: &runtime.RawExtension{Raw: []byte(`{"type":"object"}`)},
		HTTP:       &exagentv1.HTTPTool{URL: "http://127.0.0.1/" + name, Idempotent: idempotent},
	})
	return w
}

// BuiltinTool adds a builtin tool with an object schema.
func (w *AgentWrapper) BuiltinTool(name string, op exagentv1.BuiltinOperation, kinds ...string) *AgentWrapper {
	w.Tools = append(w.Tools, exagentv1.ToolSpec{
		Name: name, Description: name + " tool",
		Parameters: &runtime.RawExtension{Raw: []byte(`{"type":"object"}`)},
		Builtin:    &exagentv1.BuiltinTool{Operation: op, Kinds: kinds},
	})
	return w
}

// EditTool changes a tool in place (its effect configuration, say).
func (w *AgentWrapper) EditTool(name string, edit func(*exagentv1.ToolSpec)) *AgentWrapper {
	edit(w.Tool(name))
	return w
}

// Schema replaces a tool's parameters.
func (w *AgentWrapper) Schema(name, schema string) *AgentWrapper {
	w.Tool(name).Parameters = &runtime.RawExtension{Raw: []byte(schema)}
	return w
}

func (w *AgentWrapper) Default(a exagentv1.PolicyAction) *AgentWrapper {
	w.Policy.Default = a
	return w
}
func (w *AgentWrapper) OnDeny(o exagentv1.OnDeny) *AgentWrapper { w.Policy.OnDeny = o; return w }

// Rule appends a policy rule.
func (w *AgentWrapper) Rule(name string, a exagentv1.PolicyAction, when string, tools ...string) *AgentWrapper {
	w.Policy.Rules = append(w.Policy.Rules, exagentv1.PolicyRule{Name: name, Tools: tools, Action: a, When: when})
	return w
}

func (w *AgentWrapper) Approvers(users ...string) *AgentWrapper {
	w.Policy.Approvers = &exagentv1.Approvers{Users: users}
	return w
}

func (w *AgentWrapper) ForbidSelf() *AgentWrapper { w.Policy.ForbidSelfApproval = true; return w }

func (w *AgentWrapper) MaxSteps(n int32) *AgentWrapper     { w.Limits.MaxSteps = &n; return w }
func (w *AgentWrapper) MaxToolCalls(n int32) *AgentWrapper { w.Limits.MaxToolCalls = &n; return w }
func (w *AgentWrapper) MaxTokens(n int64) *AgentWrapper    { w.Limits.MaxTokens = &n; return w }
func (w *AgentWrapper) MaxRuns(n int32) *AgentWrapper      { w.Limits.MaxRuns = &n; return w }
func (w *AgentWrapper) ActiveTime(d exagentv1.Duration) *AgentWrapper {
	w.Limits.ActiveTime = d
	return w
}
func (w *AgentWrapper) ModelName(n string) *AgentWrapper { w.Model.Name = n; return w }

func (w *AgentWrapper) Obj() *exagentv1.AgentSpec { return w.DeepCopy() }

// RunWrapper builds an AgentRunSpec fluently.
type RunWrapper struct{ exagentv1.AgentRunSpec }

func MakeRun() *RunWrapper {
	return &RunWrapper{exagentv1.AgentRunSpec{
		AgentRef:    exagentv1.LocalObjectReference{Name: "agent"},
		Input:       "do the thing",
		RequestedBy: &exagentv1.Actor{Username: "requester"},
		// Most tests exercise the active-time accounting; unset (no limit)
		// is tested on its own.
		ActiveTimeLimit: "1h",
	}}
}

func (w *RunWrapper) Deadline(t time.Time) *RunWrapper {
	d := metav1.NewTime(t)
	w.AgentRunSpec.Deadline = &d
	return w
}
func (w *RunWrapper) ApprovalTimeout(d exagentv1.Duration) *RunWrapper {
	w.AgentRunSpec.ApprovalTimeout = d
	return w
}
func (w *RunWrapper) ActiveTimeLimit(d exagentv1.Duration) *RunWrapper {
	w.AgentRunSpec.ActiveTimeLimit = d
	return w
}
func (w *RunWrapper) Lease(d exagentv1.Duration) *RunWrapper { w.LeaseDuration = d; return w }
func (w *RunWrapper) Obj() *exagentv1.AgentRunSpec           { return w.DeepCopy() }

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
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Obj(), MakeRun().Obj())
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
