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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// resumed is the paused fixture after p1 was approved and worker-2 claimed
// it (attempt 2): p1 is Approved and ready to begin.
func resumed(t *testing.T) Status {
	_, s := paused(t)
	env := defaultEnv(t)
	s, _, err := Approve(s, env, approveCmd(t, s, "p1", "op-1", "alice"), t0)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err = Claim(s, env, "worker-2", t0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var f2 = Fence{Holder: "worker-2", Attempt: 2}

func TestBeginEffectRecheck(t *testing.T) {
	base := func() *fixture.AgentWrapper { return MakeAgent().HTTPTool("search", false).HTTPTool("pay", false) }
	same := defaultEnv(t)
	cases := map[string]struct {
		env         *Env
		wantState   exagentv1.CallState
		wantNewHash bool
		wantResult  string
	}{
		"unchanged configuration runs": {env: same, wantState: exagentv1.CallStarted},
		"stricter policy wins": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			Rule("no-pay", exagentv1.PolicyDeny, "", "pay").Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallRefused, wantResult: "Refused by policy (rule no-pay)"},
		"stricter when wins": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			Rule("cap", exagentv1.PolicyDeny, "args.amount > 10", "pay").Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallRefused, wantResult: "rule cap"},
		"looser policy grants nothing retroactively": {env: mustEnv(t, base().Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallPending, wantNewHash: true},
		"changed schema: the old approval does not cover it": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			Schema("pay", `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`).Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallPending, wantNewHash: true},
		"schema now rejects the args: failed, never run": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			Schema("pay", `{"type":"object","properties":{"amount":{"maximum":10}},"required":["amount","currency"]}`).Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallFailed, wantResult: "InvalidArguments: the arguments do not match the parameters schema of tool \"pay\": " +
				"at the top level: missing property 'currency'; at /amount: maximum: got 42, want 10. The call was not run."},
		"changed url: the old approval does not cover it": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			EditTool("pay", func(t *exagentv1.ToolSpec) { t.HTTP.URL = "http://127.0.0.1/pay-prod" }).Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallPending, wantNewHash: true},
		"now idempotent: the old approval does not cover it": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			EditTool("pay", func(t *exagentv1.ToolSpec) { t.HTTP.Idempotent = true }).Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallPending, wantNewHash: true},
		"changed header secret: the old approval does not cover it": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			EditTool("pay", func(t *exagentv1.ToolSpec) {
				t.HTTP.Headers = []exagentv1.SecretHeader{{Name: "Authorization", ValueFrom: exagentv1.SecretKeySelector{Name: "prod", Key: "token"}}}
			}).Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallPending, wantNewHash: true},
		"changed timeout is not what the call does": {env: mustEnv(t, base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			EditTool("pay", func(t *exagentv1.ToolSpec) { t.HTTP.Timeout = "5s" }).Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallStarted},
		"tool gone": {env: mustEnv(t, MakeAgent().HTTPTool("search", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), MakeRun().Spec()),
			wantState: exagentv1.CallFailed, wantResult: "UnknownTool"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := resumed(t)
			oldHash := s.Calls[1].PayloadHash
			got, err := BeginEffect(s, tc.env, f2, []string{"p1"}, t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			c := got.Calls[1]
			if c.State != tc.wantState {
				t.Fatalf("state = %s, want %s", c.State, tc.wantState)
			}
			if (c.PayloadHash != oldHash) != tc.wantNewHash {
				t.Errorf("payload hash changed = %v, want %v", c.PayloadHash != oldHash, tc.wantNewHash)
			}
			if tc.wantResult != "" && (c.Outcome == nil || !strings.Contains(c.Outcome.Result, tc.wantResult)) {
				t.Errorf("outcome = %+v, want %q", c.Outcome, tc.wantResult)
			}
			wantCalls := int64(1)
			if tc.wantState == exagentv1.CallStarted {
				wantCalls = 2
				if c.IdempotencyKey != runUID+"/p1" || c.Attempt != 2 {
					t.Errorf("intent = key %q attempt %d", c.IdempotencyKey, c.Attempt)
				}
			}
			if got.Ledger.ToolCalls != wantCalls {
				t.Errorf("ledger.toolCalls = %d, want %d", got.Ledger.ToolCalls, wantCalls)
			}
		})
	}
}

// A call re-asked at begin-effect pauses again with a new revision and an
// approval bound to the new payload; the old approval cannot approve it.
func TestRecheckPausesAgain(t *testing.T) {
	cases := map[string]*fixture.AgentWrapper{
		"looser policy": MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Default(exagentv1.PolicyAllow),
		"the tool's URL changed while the run waited": MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
			Rule("search-ok", exagentv1.PolicyAllow, "", "search").
			EditTool("pay", func(t *exagentv1.ToolSpec) { t.HTTP.URL = "http://127.0.0.1/pay-prod" }),
	}
	for name, agent := range cases {
		t.Run(name, func(t *testing.T) {
			env := mustEnv(t, agent.Spec(), MakeRun().Spec())
			s := resumed(t)
			old := s.Approvals[0]
			got, act, err := Step(s, env, f2, t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if act.Kind != ActPause || got.Revision != 2 || len(act.Approvals) != 1 || act.Approvals[0].ID != "p1-r2" ||
				act.Approvals[0].PayloadHash == old.PayloadHash {
				t.Fatalf("action %+v revision %d", act, got.Revision)
			}
			if c := got.Calls[1]; c.State != exagentv1.CallPending || c.IdempotencyKey != "" || got.Ledger.ToolCalls != 1 {
				t.Fatalf("p1 = %s key %q, ledger.toolCalls %d: it must not have started", c.State, c.IdempotencyKey, got.Ledger.ToolCalls)
			}
			stale := DecisionCmd{OperationID: "op-old", Decision: exagentv1.DecisionApprove, ApprovalID: old.ID,
				PayloadHash: old.PayloadHash, Revision: old.Revision, Actor: actor("alice")}
			if _, _, err := Decide(got, env, stale, t0); !IsKind(err, KindConflict) {
				t.Errorf("old approval reused: %v", err)
			}
			if _, _, err := Decide(got, env, approveCmd(t, got, "p1", "op-new", "alice"), t0); err != nil {
				t.Errorf("fresh approval: %v", err)
			}
		})
	}
}

func TestBeginEffectGuards(t *testing.T) {
	env := defaultEnv(t)
	allow := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Default(exagentv1.PolicyAllow).MaxToolCalls(1).Spec(), MakeRun().Spec())
	batch := atBatch(t, allow, tools(call("a", "search", `{}`), call("b", "search", `{}`)))
	admitted := clone(batch)
	admitProposed(&admitted, allow)
	cases := map[string]struct {
		s        Status
		env      *Env
		ids      []string
		wantKind ErrorKind
	}{
		"no such call":        {s: admitted, env: allow, ids: []string{"zz"}, wantKind: KindNotPending},
		"not admitted yet":    {s: batch, env: allow, ids: []string{"a"}, wantKind: KindNotPending},
		"maxToolCalls":        {s: admitted, env: allow, ids: []string{"a", "b"}, wantKind: KindLimitExceeded},
		"within maxToolCalls": {s: admitted, env: allow, ids: []string{"a"}},
		"not the current batch": {s: func() Status {
			s := clone(admitted)
			s.Cursor.Stage = exagentv1.StageRequest
			return s
		}(), env: allow, ids: []string{"a"}, wantKind: KindNotPending},
		"pending call": {s: func() Status { _, s := inFlightRun(t); return s }(), env: env, ids: []string{"p1"}, wantKind: KindNotPending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := BeginEffect(tc.s, tc.env, f1, tc.ids, t0)
			wantErrKind(t, err, tc.wantKind)
		})
	}
}

// A retried call keeps its idempotency key and is not admitted twice.
func TestRetryKeepsKeyAndCountsOnce(t *testing.T) {
	h, s := uncertainRun(t)
	for _, id := range []string{"p1", "p2"} {
		c := s.Calls[findCall(&s, id)]
		s2, _, err := Resolve(s, h.env, DecisionCmd{OperationID: "r-" + id, CallID: id, PayloadHash: c.PayloadHash,
			Revision: s.Revision, Actor: actor("alice"), Outcome: exagentv1.ResolveRetry}, t0)
		if err != nil {
			t.Fatal(err)
		}
		s = s2
	}
	s, f, err := Claim(s, h.env, "w2", t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, act, err := Step(s, h.env, f, t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolInvocation{
		{CallID: "p1", Tool: "pay", Args: []byte(`{"amount":1}`), IdempotencyKey: runUID + "/p1", Attempt: 2},
		{CallID: "p2", Tool: "pay", Args: []byte(`{"amount":2}`), IdempotencyKey: runUID + "/p2", Attempt: 2},
	}
	if diff := cmp.Diff(want, act.Calls); diff != "" {
		t.Errorf("retry invocations (-want +got):\n%s", diff)
	}
	if got.Ledger.ToolCalls != 2 {
		t.Errorf("ledger.toolCalls = %d, want 2 (a persisted batch is not admitted twice)", got.Ledger.ToolCalls)
	}
}

func TestRecordOutcome(t *testing.T) {
	env := defaultEnv(t)
	_, s := inFlightRun(t)
	now := t0.Add(time.Second)
	at := microTimePtr(now)
	cases := map[string]struct {
		r    ToolResult
		want func(*Status)
	}{
		"succeeded": {r: ToolResult{CallID: "s1", Kind: ResultSucceeded, Output: "found"}, want: func(s *Status) {
			s.Calls[0].State = exagentv1.CallSucceeded
			s.Calls[0].Outcome = &exagentv1.CallOutcome{Succeeded: true, Result: "found", At: at}
		}},
		"failed": {r: ToolResult{CallID: "s1", Kind: ResultFailed, Output: "404"}, want: func(s *Status) {
			s.Calls[0].State = exagentv1.CallFailed
			s.Calls[0].Outcome = &exagentv1.CallOutcome{Result: "404", At: at}
		}},
		"unknown is uncertain, never a failure": {r: ToolResult{CallID: "s1", Kind: ResultUnknown, Output: "timeout"}, want: func(s *Status) {
			s.Calls[0].State = exagentv1.CallUncertain
		}},
		"large output is bounded": {r: ToolResult{CallID: "s1", Kind: ResultSucceeded, Output: strings.Repeat("a", maxContent+10)}, want: func(s *Status) {
			s.Calls[0].State = exagentv1.CallSucceeded
			s.Calls[0].Outcome = &exagentv1.CallOutcome{Succeeded: true, Result: strings.Repeat("a", maxContent-len(truncatedMark)) + truncatedMark, At: at}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RecordOutcome(s, env, f1, tc.r, now)
			if err != nil {
				t.Fatal(err)
			}
			want := clone(s)
			tc.want(&want)
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordOutcomeGuards(t *testing.T) {
	env := defaultEnv(t)
	_, s := inFlightRun(t)
	tight, _ := NewEnv(EnvInput{RunUID: runUID, Agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), Run: MakeRun().Spec(), SizeBudget: encodedSize(&s) + 200})
	full, _ := NewEnv(EnvInput{RunUID: runUID, Agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(), Run: MakeRun().Spec(), SizeBudget: encodedSize(&s)})
	cases := map[string]struct {
		s        Status
		env      *Env
		r        ToolResult
		wantKind ErrorKind
		check    func(t *testing.T, got Status)
	}{
		"no such call":     {s: s, env: env, r: ToolResult{CallID: "x", Kind: ResultSucceeded}, wantKind: KindNotPending},
		"call not started": {s: s, env: env, r: ToolResult{CallID: "p1", Kind: ResultSucceeded}, wantKind: KindNotPending},
		"bad kind":         {s: s, env: env, r: ToolResult{CallID: "s1", Kind: "Maybe"}, wantKind: KindConflict},
		"stale attempt": {s: func() Status { s := clone(s); s.Calls[0].Attempt = 0; s.Calls[0].Attempt = 5; return s }(),
			env: env, r: ToolResult{CallID: "s1", Kind: ResultSucceeded}, wantKind: KindStaleFence},
		"shortened to fit the budget": {s: s, env: tight, r: ToolResult{CallID: "s1", Kind: ResultSucceeded, Output: strings.Repeat("b", 5000)},
			check: func(t *testing.T, got Status) {
				r := got.Calls[0].Outcome.Result
				if len(r) >= 5000 || encodedSize(&got) > tight.SizeBudget() {
					t.Errorf("result of %d bytes, status %d bytes", len(r), encodedSize(&got))
				}
			}},
		"nothing fits": {s: s, env: full, r: ToolResult{CallID: "s1", Kind: ResultSucceeded, Output: "x"}, wantKind: KindTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.s.Claim != nil {
				tc.s.Claim.LeaseExpiresAt = metav1.NewMicroTime(t0.Add(time.Hour))
			}
			got, err := RecordOutcome(tc.s, tc.env, f1, tc.r, t0)
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			tc.check(t, got)
		})
	}
}

func TestOutstanding(t *testing.T) {
	h, s := inFlightRun(t)
	want := []ToolInvocation{{CallID: "s1", Tool: "search", Args: []byte(`{"q":"x"}`), IdempotencyKey: runUID + "/s1", Attempt: 1}}
	if diff := cmp.Diff(want, Outstanding(s, f1)); diff != "" {
		t.Errorf("outstanding (-want +got):\n%s", diff)
	}
	if got := Outstanding(s, Fence{Holder: "x", Attempt: 2}); len(got) != 0 {
		t.Errorf("another attempt sees %v", got)
	}
	h.outcome("s1", ResultSucceeded, "ok")
	if got := Outstanding(h.s, f1); len(got) != 0 {
		t.Errorf("after the outcome: %v", got)
	}
}
