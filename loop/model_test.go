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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

func TestRecordModelResponse(t *testing.T) {
	env := defaultEnv(t)
	s := awaitingModel(t, env)
	now := t0.Add(time.Second)
	ph := func(tool, args string) string {
		h, err := env.payloadHash(tool, args)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	proposed := func(id, tool, args string) exagentv1.ToolCall {
		return exagentv1.ToolCall{ID: id, Tool: tool, Args: args, ArgsHash: canonical.Hash([]byte(args)), PayloadHash: ph(tool, args), State: exagentv1.CallProposed}
	}
	cases := map[string]struct {
		s    Status
		r    ModelResponse
		want func(*Status)
	}{
		"text answer": {s: s, r: ModelResponse{Content: "done", PromptTokens: 7, CompletionTokens: 3}, want: func(s *Status) {
			s.History = append(s.History, exagentv1.Message{Role: exagentv1.RoleAssistant, Content: "done"})
			s.Cursor.Stage, s.Cursor.ModelRequest = exagentv1.StageFinish, nil
			s.Ledger.PromptTokens, s.Ledger.CompletionTokens = 7, 3
		}},
		"tool calls are journaled with canonical args": {s: s, r: ModelResponse{Content: "let me look", ToolCalls: []exagentv1.MessageToolCall{
			call("c1", "search", `{ "q": "x", "a": 1.0 }`), call("c2", "pay", ``)}}, want: func(s *Status) {
			s.History = append(s.History, exagentv1.Message{Role: exagentv1.RoleAssistant, Content: "let me look", ToolCalls: []exagentv1.MessageToolCall{
				call("c1", "search", `{"a":1,"q":"x"}`), call("c2", "pay", `{}`)}})
			s.Calls = []exagentv1.ToolCall{proposed("c1", "search", `{"a":1,"q":"x"}`), proposed("c2", "pay", `{}`)}
			s.Cursor.Stage, s.Cursor.ModelRequest = exagentv1.StageBatch, nil
		}},
		"ids are generated when missing, duplicate or too long": {s: s, r: tools(call("", "search", `{}`), call("dup", "search", `{}`),
			call("dup", "search", `{}`), call(strings.Repeat("x", 65), "search", `{}`), call("call-0-0", "search", `{}`)), want: func(s *Status) {
			ids := []string{"call-0-0", "dup", "call-0-2", "call-0-3", "call-0-4"}
			msg := exagentv1.Message{Role: exagentv1.RoleAssistant}
			for _, id := range ids {
				msg.ToolCalls = append(msg.ToolCalls, call(id, "search", `{}`))
				s.Calls = append(s.Calls, proposed(id, "search", `{}`))
			}
			s.History = append(s.History, msg)
			s.Cursor.Stage, s.Cursor.ModelRequest = exagentv1.StageBatch, nil
			s.Ledger.PromptTokens, s.Ledger.CompletionTokens = 10, 5
		}},
		"arguments that are not json fail the call": {s: s, r: ModelResponse{ToolCalls: []exagentv1.MessageToolCall{call("c1", "search", `{"q":`)}, PromptTokens: -3}, want: func(s *Status) {
			s.History = append(s.History, exagentv1.Message{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{call("c1", "search", `{"q":`)}})
			s.Calls = []exagentv1.ToolCall{{ID: "c1", Tool: "search", Args: `{"q":`, State: exagentv1.CallFailed,
				Outcome: &exagentv1.CallOutcome{Result: "InvalidArguments: the arguments are not valid JSON: canonical json: decode: unexpected EOF"}}}
			s.Cursor.Stage, s.Cursor.ModelRequest = exagentv1.StageBatch, nil
		}},
		"resets consecutive failures": {s: func() Status { s := clone(s); s.Cursor.ModelFailures = 2; return s }(), r: text("ok"), want: func(s *Status) {
			s.History = append(s.History, exagentv1.Message{Role: exagentv1.RoleAssistant, Content: "ok"})
			s.Cursor.Stage, s.Cursor.ModelRequest, s.Cursor.ModelFailures = exagentv1.StageFinish, nil, 0
			s.Ledger.PromptTokens, s.Ledger.CompletionTokens = 10, 5
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RecordModelResponse(tc.s, env, f1, tc.r, now)
			if err != nil {
				t.Fatal(err)
			}
			want := clone(tc.s)
			tc.want(&want)
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordModelResponseGuards(t *testing.T) {
	env := defaultEnv(t)
	s := awaitingModel(t, env)
	bigArgs := fmt.Sprintf(`{"x":%q}`, strings.Repeat("y", maxContent))
	many := make([]exagentv1.MessageToolCall, maxToolCalls+1)
	for i := range many {
		many[i] = call("", "search", `{}`)
	}
	small, _ := NewEnv(EnvInput{RunUID: runUID, Agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), Run: MakeRun().Spec(), SizeBudget: encodedSize(&s) + 50})
	cases := map[string]struct {
		s        Status
		env      *Env
		r        ModelResponse
		wantKind ErrorKind
		check    func(t *testing.T, got Status)
	}{
		"no request outstanding": {s: running(t, env), env: env, r: text("x"), wantKind: KindNotPending},
		"request of an older attempt": {s: func() Status {
			s := clone(s)
			s.Cursor.ModelRequest.Attempt = 0
			s.Cursor.ModelRequest.Attempt = 9
			return s
		}(),
			env: env, r: text("x"), wantKind: KindNotPending},
		"too many tool calls is a failed request": {s: s, env: env, r: ModelResponse{ToolCalls: many}, check: func(t *testing.T, got Status) {
			if got.Cursor.ModelFailures != 1 || got.Cursor.ModelRequest != nil || len(got.Calls) != 0 {
				t.Errorf("want a failed request, got cursor %+v", got.Cursor)
			}
		}},
		"args too large fail the call": {s: s, env: env, r: tools(call("c", "search", bigArgs)), check: func(t *testing.T, got Status) {
			c := got.Calls[0]
			if c.State != exagentv1.CallFailed || len(c.Args) > maxContent || !strings.Contains(c.Outcome.Result, "more than") {
				t.Errorf("call = %s %d %v", c.State, len(c.Args), c.Outcome)
			}
		}},
		"over the size budget": {s: s, env: small, r: text(strings.Repeat("z", 500)), wantKind: KindTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RecordModelResponse(tc.s, tc.env, f1, tc.r, t0)
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			tc.check(t, got)
		})
	}
}

func TestRecordModelFailure(t *testing.T) {
	env := defaultEnv(t)
	s := awaitingModel(t, env)
	now := t0.Add(2 * time.Second)
	cases := map[string]struct {
		s        Status
		want     func(*Status)
		wantKind ErrorKind
	}{
		"first failure: the next Step re-sends": {s: s, want: func(s *Status) {
			s.Cursor.ModelRequest, s.Cursor.ModelFailures = nil, 1
			s.Message = "model request failed (1 of 3): 500"
		}},
		"last failure ends the run": {s: func() Status { s := clone(s); s.Cursor.ModelFailures = 2; return s }(), want: func(s *Status) {
			s.Cursor.ModelRequest, s.Cursor.ModelFailures = nil, 3
			s.Phase, s.Reason, s.Message = exagentv1.PhaseFailed, exagentv1.ReasonModelError, "3 consecutive model requests failed; last: 500"
			s.Claim = nil
			s.Ledger.ActiveTimeUsed.Duration, s.Ledger.ActiveTimeReserved.Duration = 2*time.Second, 0
		}},
		"nothing outstanding": {s: running(t, env), wantKind: KindNotPending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RecordModelFailure(tc.s, env, f1, "500", now)
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			want := clone(tc.s)
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}
