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
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// stepWant is what a Step case checks: the action's kind and details, and
// a projection of the state.
type stepWant struct {
	Kind      ActionKind
	Reason    string
	Phase     exagentv1.RunPhase
	Step      int32
	Stage     exagentv1.Stage
	Requests  int64
	ToolCalls int64
	Calls     map[string]exagentv1.CallState
	RunTools  []string
	Approvals []string
	Revision  int64
	Claimed   bool
}

func project(s Status, a Action) stepWant {
	w := stepWant{Kind: a.Kind, Reason: a.Reason, Phase: s.Phase, Step: s.Cursor.Step, Stage: s.Cursor.Stage,
		Requests: s.Ledger.Requests, ToolCalls: s.Ledger.ToolCalls, Revision: s.Revision, Claimed: s.Claim != nil,
		Calls: map[string]exagentv1.CallState{}}
	for _, c := range s.Calls {
		w.Calls[c.ID] = c.State
	}
	for _, c := range a.Calls {
		w.RunTools = append(w.RunTools, c.CallID)
	}
	for _, ap := range a.Approvals {
		w.Approvals = append(w.Approvals, ap.ID)
	}
	return w
}

func TestStep(t *testing.T) {
	env := defaultEnv(t)
	allowAll := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
	mixed := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).HTTPTool("rm", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Rule("no-rm", exagentv1.PolicyDeny, "", "rm").Spec(), MakeRun().Spec())
	limits := func(w *fixture.AgentWrapper) *Env {
		return mustEnv(t, w.HTTPTool("search", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
	}
	deadline := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Spec(), MakeRun().Deadline(t0.Add(time.Minute)).Spec())
	none := map[string]exagentv1.CallState{}
	oneSearchAllowed := atBatch(t, allowAll, tools(call("a", "search", `{}`), call("b", "search", `{}`)))

	cases := map[string]struct {
		s    Status
		env  *Env
		f    Fence
		now  time.Time
		want stepWant
	}{
		"first request": {s: running(t, env), env: env, want: stepWant{Kind: ActCallModel, Phase: exagentv1.PhaseRunning,
			Stage: exagentv1.StageRequest, Requests: 1, Calls: none, Claimed: true}},
		"request of this attempt in flight waits": {s: awaitingModel(t, env), env: env, want: stepWant{Kind: ActWait,
			Phase: exagentv1.PhaseRunning, Stage: exagentv1.StageRequest, Requests: 1, Calls: none, Claimed: true}},
		"lost request of an older attempt is re-sent and charged": {s: func() Status {
			s := awaitingModel(t, env)
			s, _ = Release(s, env, f1, t0)
			s, _, _ = Claim(s, env, w1, t0)
			return s
		}(), env: env, f: Fence{Holder: w1, Attempt: 2}, want: stepWant{Kind: ActCallModel, Phase: exagentv1.PhaseRunning,
			Stage: exagentv1.StageRequest, Requests: 2, Calls: none, Claimed: true}},
		"policy splits a batch": {s: atBatch(t, mixed, tools(call("s", "search", `{}`), call("p", "pay", `{}`), call("r", "rm", `{}`), call("u", "nope", `{}`))),
			env: mixed, want: stepWant{Kind: ActRunTools, Phase: exagentv1.PhaseRunning, Stage: exagentv1.StageBatch, Requests: 1, ToolCalls: 1,
				Calls:    map[string]exagentv1.CallState{"s": exagentv1.CallStarted, "p": exagentv1.CallPending, "r": exagentv1.CallRefused, "u": exagentv1.CallFailed},
				RunTools: []string{"s"}, Claimed: true}},
		"calls in flight wait": {s: func() Status { _, s := inFlightRun(t); return s }(), env: env, want: stepWant{Kind: ActWait,
			Phase: exagentv1.PhaseRunning, Stage: exagentv1.StageBatch, Requests: 1, ToolCalls: 1,
			Calls: map[string]exagentv1.CallState{"s1": exagentv1.CallStarted, "p1": exagentv1.CallPending}, Claimed: true}},
		"pause only after siblings confirmed": {s: func() Status {
			h, _ := inFlightRun(t)
			h.outcome("s1", ResultSucceeded, "ok")
			return h.s
		}(), env: env, want: stepWant{Kind: ActPause, Reason: exagentv1.ReasonPending, Phase: exagentv1.PhaseAwaitingApproval,
			Stage: exagentv1.StageBatch, Requests: 1, ToolCalls: 1, Revision: 1, Approvals: []string{"p1-r1"},
			Calls: map[string]exagentv1.CallState{"s1": exagentv1.CallSucceeded, "p1": exagentv1.CallPending}}},
		"uncertain beats paused": {s: func() Status {
			h, _ := inFlightRun(t)
			h.outcome("s1", ResultUnknown, "")
			return h.s
		}(), env: env, want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonOutcomeUncertain, Phase: exagentv1.PhaseUncertain,
			Stage: exagentv1.StageBatch, Requests: 1, ToolCalls: 1, Revision: 1,
			Calls: map[string]exagentv1.CallState{"s1": exagentv1.CallUncertain, "p1": exagentv1.CallPending}}},
		"closed batch goes on to the next request in the same write": {s: func() Status {
			h := newHarness(t, allowAll).claim(w1)
			h.step()
			h.respond(tools(call("a", "search", `{}`), call("b", "search", `{}`)))
			h.step()
			h.outcome("b", ResultSucceeded, "B").outcome("a", ResultFailed, "boom")
			return h.s
		}(), env: allowAll, want: stepWant{Kind: ActCallModel, Phase: exagentv1.PhaseRunning, Step: 1, Stage: exagentv1.StageRequest,
			Requests: 2, ToolCalls: 2, Calls: map[string]exagentv1.CallState{"a": exagentv1.CallFailed, "b": exagentv1.CallSucceeded}, Claimed: true}},
		"finish": {s: atBatch(t, env, text("the answer")), env: env, want: stepWant{Kind: ActFinish, Phase: exagentv1.PhaseSucceeded,
			Stage: exagentv1.StageFinish, Requests: 1, Calls: none}},
		"started by an older attempt is uncertain": {s: func() Status {
			_, s := inFlightRun(t)
			s.Calls[0].Attempt = 0
			s.Calls[0].Attempt = 7
			return s
		}(), env: env, want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonOutcomeUncertain, Phase: exagentv1.PhaseUncertain,
			Stage: exagentv1.StageBatch, Requests: 1, ToolCalls: 1, Revision: 1,
			Calls: map[string]exagentv1.CallState{"s1": exagentv1.CallUncertain, "p1": exagentv1.CallPending}}},
		"maxSteps": {s: func() Status { s := running(t, env); s.Cursor.Step = 3; return s }(), env: limits(MakeAgent().MaxSteps(3)),
			want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonLimitExceeded, Phase: exagentv1.PhaseFailed, Step: 3, Stage: exagentv1.StageRequest, Calls: none}},
		"maxTokens before a request": {s: func() Status { s := running(t, env); s.Ledger.PromptTokens = 100; return s }(), env: limits(MakeAgent().MaxTokens(100)),
			want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonLimitExceeded, Phase: exagentv1.PhaseFailed, Stage: exagentv1.StageRequest, Calls: none}},
		"maxTokens before tools": {s: oneSearchAllowed, env: limits(MakeAgent().MaxTokens(15)),
			want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonLimitExceeded, Phase: exagentv1.PhaseFailed, Stage: exagentv1.StageBatch, Requests: 1,
				Calls: map[string]exagentv1.CallState{"a": exagentv1.CallAllowed, "b": exagentv1.CallAllowed}}},
		"maxToolCalls starts none of the batch": {s: oneSearchAllowed, env: limits(MakeAgent().MaxToolCalls(1)),
			want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonLimitExceeded, Phase: exagentv1.PhaseFailed, Stage: exagentv1.StageBatch, Requests: 1,
				Calls: map[string]exagentv1.CallState{"a": exagentv1.CallAllowed, "b": exagentv1.CallAllowed}}},
		"active time used up": {s: running(t, env), env: env, now: t0.Add(time.Hour),
			want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonLimitExceeded, Phase: exagentv1.PhaseFailed, Stage: exagentv1.StageRequest, Calls: none}},
		"deadline": {s: running(t, deadline), env: deadline, now: t0.Add(time.Minute),
			want: stepWant{Kind: ActFail, Reason: exagentv1.ReasonDeadlineExceeded, Phase: exagentv1.PhaseExpired, Stage: exagentv1.StageRequest, Calls: none}},
		"deadline waits for calls in flight": {s: func() Status { _, s := inFlightRun(t); return s }(), env: deadline, now: t0.Add(time.Minute),
			want: stepWant{Kind: ActWait, Phase: exagentv1.PhaseRunning, Stage: exagentv1.StageBatch, Requests: 1, ToolCalls: 1,
				Calls: map[string]exagentv1.CallState{"s1": exagentv1.CallStarted, "p1": exagentv1.CallPending}, Claimed: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, now := tc.f, tc.now
			if f == (Fence{}) {
				f = f1
			}
			if now.IsZero() {
				now = t0.Add(time.Second)
			}
			if tc.s.Claim != nil {
				tc.s.Claim.LeaseExpiresAt = metav1.NewMicroTime(now.Add(time.Minute))
			}
			before := mustJSON(t, tc.s)
			got, act, err := Step(tc.s, tc.env, f, now)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if mustJSON(t, tc.s) != before {
				t.Errorf("Step mutated its input")
			}
			if diff := cmp.Diff(tc.want, project(got, act)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if err := validateContinuation(&got); err != nil && !got.Phase.IsTerminal() {
				t.Errorf("Step returned an invalid continuation: %v", err)
			}
		})
	}
}

func TestStepActionDetails(t *testing.T) {
	env := defaultEnv(t)
	t.Run("model request carries the transcript and the tools", func(t *testing.T) {
		s := running(t, env)
		got, act, err := Step(s, env, f1, t0)
		if err != nil {
			t.Fatal(err)
		}
		want := &ModelRequest{Step: 0, Request: 1, Messages: s.History, Tools: env.Tools()}
		if diff := cmp.Diff(want, act.Model); diff != "" {
			t.Errorf("model request (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(&exagentv1.ModelRequestIntent{Attempt: 1, Request: 1}, got.Cursor.ModelRequest); diff != "" {
			t.Errorf("intent (-want +got):\n%s", diff)
		}
		act.Model.Messages[0].Content = "mutated"
		if got.History[0].Content == "mutated" {
			t.Errorf("the action aliases the state's history")
		}
	})
	t.Run("tool invocation carries args, key and attempt", func(t *testing.T) {
		_, s := inFlightRun(t)
		_ = s
		h := newHarness(t, env).claim(w1)
		h.step()
		h.respond(tools(call("s1", "search", `{ "q" : "x" }`)))
		act := h.step()
		want := []ToolInvocation{{CallID: "s1", Tool: "search", Args: json.RawMessage(`{"q":"x"}`), IdempotencyKey: runUID + "/s1", Attempt: 1}}
		if diff := cmp.Diff(want, act.Calls); diff != "" {
			t.Errorf("invocations (-want +got):\n%s", diff)
		}
		if c := h.s.Calls[0]; c.StartedAt == nil || c.Attempt != 1 {
			t.Errorf("intent not recorded: %+v", c)
		}
	})
	t.Run("results keep the model's order", func(t *testing.T) {
		allow := mustEnv(t, MakeAgent().HTTPTool("search", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
		h := newHarness(t, allow).claim(w1)
		h.step()
		h.respond(tools(call("a", "search", `{}`), call("b", "search", `{}`), call("c", "nope", `{}`)))
		h.step()
		h.outcome("b", ResultSucceeded, "B").outcome("a", ResultFailed, "A failed")
		h.step()
		var got []exagentv1.Message
		for _, m := range h.s.History {
			if m.Role == exagentv1.RoleTool {
				got = append(got, m)
			}
		}
		want := []exagentv1.Message{
			{Role: exagentv1.RoleTool, ToolCallID: "a", Content: "Error: A failed"},
			{Role: exagentv1.RoleTool, ToolCallID: "b", Content: "B"},
			{Role: exagentv1.RoleTool, ToolCallID: "c", Content: `Error: UnknownTool: there is no tool "nope"; the tools are: search`},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tool messages (-want +got):\n%s", diff)
		}
	})
	t.Run("finish refunds the unused active time", func(t *testing.T) {
		s := atBatch(t, env, text("answer"))
		got, act, err := Step(s, env, f1, t0.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if act.Output != "answer" || got.Output != "answer" || got.Claim != nil ||
			got.Ledger.ActiveTimeUsed.Duration != 3*time.Second || got.Ledger.ActiveTimeReserved.Duration != 0 {
			t.Errorf("finish: action %+v, output %q, claim %v, ledger %+v", act, got.Output, got.Claim, got.Ledger)
		}
	})
	t.Run("limit message names the limit", func(t *testing.T) {
		lenv := mustEnv(t, MakeAgent().MaxSteps(1).Spec(), MakeRun().Spec())
		s := running(t, lenv)
		s.Cursor.Step = 1
		got, act, _ := Step(s, lenv, f1, t0)
		if !strings.Contains(act.Message, "maxSteps (1)") || got.Message != act.Message {
			t.Errorf("message = %q", act.Message)
		}
	})
}

func TestStepErrors(t *testing.T) {
	env := defaultEnv(t)
	idle := running(t, env)
	tiny, err := NewEnv(EnvInput{RunUID: runUID, Agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), Run: MakeRun().Spec(), SizeBudget: encodedSize(&idle) + 20})
	if err != nil {
		t.Fatal(err)
	}
	batch := atBatch(t, env, tools(call("s1", "search", `{}`)))
	cases := map[string]struct {
		s        Status
		env      *Env
		wantKind ErrorKind
		wantMsg  string
	}{
		"history omitted": {s: func() Status { s := running(t, env); s.History = nil; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "history is empty"},
		"no user message": {s: func() Status { s := running(t, env); s.History = s.History[:1]; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "no user message"},
		"binding omitted": {s: func() Status { s := running(t, env); s.Binding = nil; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "binding"},
		"pending response omitted": {s: func() Status { s := clone(batch); s.History = s.History[:2]; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "response"},
		"calls omitted": {s: func() Status { s := clone(batch); s.Calls = nil; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "has 0 calls"},
		"calls reordered": {s: func() Status { s := clone(batch); s.Calls[0].ID = "other"; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "do not match"},
		"final answer omitted": {s: func() Status { s := running(t, env); s.Cursor.Stage = exagentv1.StageFinish; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "final answer"},
		"stage omitted": {s: func() Status { s := running(t, env); s.Cursor.Stage = ""; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "cursor.stage"},
		"success without outcome": {s: func() Status {
			s := clone(batch)
			s.Calls[0].State = exagentv1.CallSucceeded
			return s
		}(), env: env, wantKind: KindInvalidContinuation, wantMsg: "outcome was omitted"},
		"started without intent": {s: func() Status {
			s := clone(batch)
			s.Calls[0].State = exagentv1.CallStarted
			return s
		}(), env: env, wantKind: KindInvalidContinuation, wantMsg: "without its intent"},
		"unknown call state": {s: func() Status { s := clone(batch); s.Calls[0].State = "Weird"; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "unknown state"},
		"call without tool": {s: func() Status { s := clone(batch); s.Calls[0].Tool = ""; return s }(), env: env,
			wantKind: KindInvalidContinuation, wantMsg: "has no tool"},
		"approval of no call": {s: func() Status {
			s := clone(batch)
			s.Approvals = []exagentv1.Approval{{ID: "a", CallID: "ghost", PayloadHash: "h", State: exagentv1.ApprovalApproved}}
			return s
		}(), env: env, wantKind: KindInvalidContinuation, wantMsg: `names call "ghost", which is not in status.calls`},
		"model intent incomplete": {s: func() Status {
			s := running(t, env)
			s.Cursor.ModelRequest = &exagentv1.ModelRequestIntent{}
			return s
		}(), env: env, wantKind: KindInvalidContinuation, wantMsg: "modelRequest"},
		"size budget before the model request": {s: idle, env: tiny, wantKind: KindTooLarge, wantMsg: "model request"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, act, err := Step(tc.s, tc.env, f1, t0)
			if !IsKind(err, tc.wantKind) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error = %v, want %s mentioning %q", err, tc.wantKind, tc.wantMsg)
			}
			if act.Kind != "" || mustJSON(t, got) != mustJSON(t, tc.s) {
				t.Errorf("an error must return the state unchanged and no action")
			}
			if !IsPermanent(err) {
				t.Errorf("%v should be permanent", err)
			}
		})
	}
}
