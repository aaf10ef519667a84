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
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

func TestNewEnvErrors(t *testing.T) {
	cases := map[string]struct {
		in      EnvInput
		wantErr string
	}{
		"no uid":           {in: EnvInput{Agent: MakeAgent().Spec(), Run: MakeRun().Spec()}, wantErr: "run UID"},
		"no agent":         {in: EnvInput{RunUID: "u", Run: MakeRun().Spec()}, wantErr: "agent and run"},
		"bad policy":       {in: EnvInput{RunUID: "u", Agent: MakeAgent().Rule("r", exagentv1.PolicyAllow, "args.x >", "a").Spec(), Run: MakeRun().Spec()}, wantErr: "policy.rules[0].when"},
		"bad approval":     {in: EnvInput{RunUID: "u", Agent: MakeAgent().Spec(), Run: MakeRun().ApprovalTimeout("soon").Spec()}, wantErr: "approvalTimeout"},
		"bad active":       {in: EnvInput{RunUID: "u", Agent: MakeAgent().Spec(), Run: MakeRun().ActiveTimeLimit("-1s").Spec()}, wantErr: "activeTimeLimit"},
		"bad agent active": {in: EnvInput{RunUID: "u", Agent: MakeAgent().ActiveTime("x").Spec(), Run: MakeRun().Spec()}, wantErr: "limits.activeTime"},
		"lease never":      {in: EnvInput{RunUID: "u", Agent: MakeAgent().Spec(), Run: MakeRun().Lease(exagentv1.Never).Spec()}, wantErr: "leaseDuration"},
		"bad schema": {in: EnvInput{RunUID: "u", Agent: func() *exagentv1.AgentSpec {
			a := MakeAgent().HTTPTool("t", false).Spec()
			a.Tools[0].Parameters = fixture.RawJSON(`{`)
			return a
		}(), Run: MakeRun().Spec()}, wantErr: `tools[0] "t" parameters`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewEnv(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestEnvDurations(t *testing.T) {
	type want struct {
		Approval      time.Duration
		ApprovalNever bool
		Active        time.Duration
		ActiveNever   bool
		Lease         time.Duration
		Budget        int
	}
	cases := map[string]struct {
		agent *exagentv1.AgentSpec
		run   *exagentv1.AgentRunSpec
		size  int
		want  want
	}{
		"defaults: no active-time limit": {agent: MakeAgent().Spec(), run: MakeRun().ActiveTimeLimit("").Spec(),
			want: want{Approval: 24 * time.Hour, ActiveNever: true, Lease: 30 * time.Second, Budget: DefaultSizeBudget}},
		"never vs unset": {agent: MakeAgent().Spec(), run: MakeRun().ApprovalTimeout(exagentv1.Never).ActiveTimeLimit(exagentv1.Never).Lease("5s").Spec(), size: 1000,
			want: want{ApprovalNever: true, ActiveNever: true, Lease: 5 * time.Second, Budget: 1000}},
		"agent limit when run unset": {agent: MakeAgent().ActiveTime("2h").Spec(), run: MakeRun().ActiveTimeLimit("").Spec(),
			want: want{Approval: 24 * time.Hour, Active: 2 * time.Hour, Lease: 30 * time.Second, Budget: DefaultSizeBudget}},
		"agent never when run unset": {agent: MakeAgent().ActiveTime(exagentv1.Never).Spec(), run: MakeRun().ActiveTimeLimit("").Spec(),
			want: want{Approval: 24 * time.Hour, ActiveNever: true, Lease: 30 * time.Second, Budget: DefaultSizeBudget}},
		"stricter agent wins": {agent: MakeAgent().ActiveTime("10m").Spec(), run: MakeRun().ActiveTimeLimit("20m").Spec(),
			want: want{Approval: 24 * time.Hour, Active: 10 * time.Minute, Lease: 30 * time.Second, Budget: DefaultSizeBudget}},
		"stricter run wins": {agent: MakeAgent().ActiveTime("10m").Spec(), run: MakeRun().ActiveTimeLimit("5m").Spec(),
			want: want{Approval: 24 * time.Hour, Active: 5 * time.Minute, Lease: 30 * time.Second, Budget: DefaultSizeBudget}},
		"run never cannot lift agent limit": {agent: MakeAgent().ActiveTime("10m").Spec(), run: MakeRun().ActiveTimeLimit(exagentv1.Never).Spec(),
			want: want{Approval: 24 * time.Hour, Active: 10 * time.Minute, Lease: 30 * time.Second, Budget: DefaultSizeBudget}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env, err := NewEnv(EnvInput{RunUID: "u", Agent: tc.agent, Run: tc.run, SizeBudget: tc.size})
			if err != nil {
				t.Fatal(err)
			}
			var got want
			got.Approval, got.ApprovalNever = env.ApprovalTimeout()
			got.Active, got.ActiveNever = env.ActiveTimeLimit()
			got.Lease, got.Budget = env.LeaseDuration(), env.SizeBudget()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("durations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvFingerprints(t *testing.T) {
	base := MakeAgent().HTTPTool("search", false).Rule("r", exagentv1.PolicyAllow, "", "search")
	fp := func(a *exagentv1.AgentSpec) exagentv1.Binding { return mustEnv(t, a, MakeRun().Spec()).Binding() }
	ref := fp(base.Spec())
	edit := func(f func(*exagentv1.ToolSpec)) *exagentv1.AgentSpec {
		a := base.Spec()
		f(&a.Tools[0])
		return a
	}
	header := func(secret string) func(*exagentv1.ToolSpec) {
		return func(t *exagentv1.ToolSpec) {
			t.HTTP.Headers = []exagentv1.SecretHeader{{Name: "Authorization", ValueFrom: exagentv1.SecretKeySelector{Name: secret, Key: "token"}}}
		}
	}
	cases := map[string]struct {
		agent                                    *exagentv1.AgentSpec
		sameDef, sameModel, samePolicy, sameTool bool
	}{
		"identical":         {agent: base.Spec(), sameDef: true, sameModel: true, samePolicy: true, sameTool: true},
		"instructions":      {agent: MakeAgent().Instructions("other").HTTPTool("search", false).Rule("r", exagentv1.PolicyAllow, "", "search").Spec(), sameModel: true, samePolicy: true, sameTool: true},
		"model name":        {agent: MakeAgent().ModelName("m2").HTTPTool("search", false).Rule("r", exagentv1.PolicyAllow, "", "search").Spec(), sameDef: true, samePolicy: true, sameTool: true},
		"policy":            {agent: MakeAgent().HTTPTool("search", false).Rule("r", exagentv1.PolicyAsk, "", "search").Spec(), sameDef: true, sameModel: true, sameTool: true},
		"explicit defaults": {agent: MakeAgent().HTTPTool("search", false).Rule("r", exagentv1.PolicyAllow, "", "search").Default(exagentv1.PolicyAsk).OnDeny(exagentv1.OnDenyStop).Spec(), sameDef: true, sameModel: true, samePolicy: true, sameTool: true},
		"schema":            {agent: MakeAgent().HTTPTool("search", false).Schema("search", `{"type":"object","required":["q"]}`).Rule("r", exagentv1.PolicyAllow, "", "search").Spec(), sameDef: true, sameModel: true, samePolicy: true},
		"schema whitespace": {agent: MakeAgent().HTTPTool("search", false).Schema("search", `{ "type" : "object" }`).Rule("r", exagentv1.PolicyAllow, "", "search").Spec(), sameDef: true, sameModel: true, samePolicy: true, sameTool: true},
		// What the call does is the tool's fingerprint, not the definition:
		// a new URL re-asks waiting approvals, it does not end the run.
		"http url":           {agent: edit(func(t *exagentv1.ToolSpec) { t.HTTP.URL = "http://elsewhere" }), sameDef: true, sameModel: true, samePolicy: true},
		"http idempotent":    {agent: edit(func(t *exagentv1.ToolSpec) { t.HTTP.Idempotent = true }), sameDef: true, sameModel: true, samePolicy: true},
		"http header secret": {agent: edit(header("prod-token")), sameDef: true, sameModel: true, samePolicy: true},
		"http timeout":       {agent: edit(func(t *exagentv1.ToolSpec) { t.HTTP.Timeout = "5s" }), sameDef: true, sameModel: true, samePolicy: true, sameTool: true},
		"description":        {agent: edit(func(t *exagentv1.ToolSpec) { t.Description = "other" }), sameModel: true, samePolicy: true, sameTool: true},
		"tool added":         {agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("r", exagentv1.PolicyAllow, "", "search").Spec(), sameModel: true, samePolicy: true, sameTool: true},
		"credentials excluded": {agent: func() *exagentv1.AgentSpec {
			a := base.Spec()
			a.Model.APIKeySecretRef = &exagentv1.SecretKeySelector{Name: "s", Key: "k"}
			return a
		}(), sameDef: true, sameModel: true, samePolicy: true, sameTool: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fp(tc.agent)
			check := func(what string, a, b string, same bool) {
				if (a == b) != same {
					t.Errorf("%s fingerprint equal=%v, want %v", what, a == b, same)
				}
			}
			check("definition", ref.Definition, got.Definition, tc.sameDef)
			check("model", ref.Model, got.Model, tc.sameModel)
			check("policy", ref.Policy, got.Policy, tc.samePolicy)
			check("tool", ref.Tools[0].Hash, got.Tools[0].Hash, tc.sameTool)
		})
	}
}

// Each tool kind's effect configuration is in its fingerprint: the
// builtin's operation and kinds (a set), the MCP server and tool, the
// delegation's child Agent; header Secret names are, their values never
// could be.
func TestToolEffectBinding(t *testing.T) {
	tool := func(ts exagentv1.ToolSpec) string {
		ts.Name, ts.Parameters = "t", fixture.RawJSON(`{"type":"object"}`)
		a := MakeAgent().Spec()
		a.Tools = []exagentv1.ToolSpec{ts}
		return mustEnv(t, a, MakeRun().Spec()).Binding().Tools[0].Hash
	}
	builtin := func(op exagentv1.BuiltinOperation, kinds ...string) exagentv1.ToolSpec {
		return exagentv1.ToolSpec{Builtin: &exagentv1.BuiltinTool{Operation: op, Kinds: kinds}}
	}
	mcp := func(url, name string) exagentv1.ToolSpec {
		return exagentv1.ToolSpec{MCP: &exagentv1.MCPTool{URL: url, Tool: name}}
	}
	child := func(name string) exagentv1.ToolSpec {
		return exagentv1.ToolSpec{Agent: &exagentv1.AgentTool{AgentRef: exagentv1.LocalObjectReference{Name: name}}}
	}
	cases := map[string]struct {
		a, b exagentv1.ToolSpec
		same bool
	}{
		"builtin operation":       {a: builtin(exagentv1.BuiltinScale, "Deployment.apps"), b: builtin(exagentv1.BuiltinDelete, "Deployment.apps")},
		"builtin kinds":           {a: builtin(exagentv1.BuiltinScale, "Deployment.apps"), b: builtin(exagentv1.BuiltinScale, "Deployment.apps", "StatefulSet.apps")},
		"builtin kinds are a set": {a: builtin(exagentv1.BuiltinGet, "ConfigMap", "Secret"), b: builtin(exagentv1.BuiltinGet, "Secret", "ConfigMap"), same: true},
		"builtin allowSecrets": {a: builtin(exagentv1.BuiltinGet, "Secret"), b: func() exagentv1.ToolSpec {
			ts := builtin(exagentv1.BuiltinGet, "Secret")
			ts.Builtin.AllowSecrets = true
			return ts
		}()},
		"mcp server":                 {a: mcp("http://a/mcp", "x"), b: mcp("http://b/mcp", "x")},
		"mcp tool":                   {a: mcp("http://a/mcp", "x"), b: mcp("http://a/mcp", "y")},
		"mcp tool defaults the name": {a: mcp("http://a/mcp", ""), b: mcp("http://a/mcp", "t"), same: true},
		"delegation target":          {a: child("refunds"), b: child("payouts")},
		"kind":                       {a: child("t"), b: builtin(exagentv1.BuiltinGet, "ConfigMap")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tool(tc.a) == tool(tc.b); got != tc.same {
				t.Errorf("same fingerprint = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestEnvAccessors(t *testing.T) {
	env := defaultEnv(t)
	if env.RunUID() != runUID || env.Policy() == nil {
		t.Errorf("RunUID/Policy accessors")
	}
	tools := env.Tools()
	tools[0].Name = "mutated"
	if env.Tools()[0].Name != "search" {
		t.Errorf("Tools() leaks internal state")
	}
	if diff := cmp.Diff([]string{"search", "pay"}, []string{env.Tools()[0].Name, env.Tools()[1].Name}); diff != "" {
		t.Errorf("tool order (-want +got):\n%s", diff)
	}
	if got := string(env.Tools()[0].Parameters); got != `{"type":"object"}` {
		t.Errorf("parameters = %s", got)
	}
	if noParams := mustEnv(t, &exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{{Name: "x", HTTP: &exagentv1.HTTPTool{URL: "http://x"}}}}, MakeRun().Spec()); string(noParams.Tools()[0].Parameters) != `{}` {
		t.Errorf("absent parameters should be the empty object schema")
	}
}

func TestCheckDrift(t *testing.T) {
	env := defaultEnv(t)
	s, err := Start(Status{}, env, t0)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		s          Status
		agent      *exagentv1.AgentSpec
		wantReason string
	}{
		"same":               {s: s, agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec()},
		"policy may change":  {s: s, agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Default(exagentv1.PolicyDeny).Spec()},
		"schema may change":  {s: s, agent: MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Schema("pay", `{"type":"object","required":["amount"]}`).Spec()},
		"definition changed": {s: s, agent: MakeAgent().Instructions("new").HTTPTool("search", false).HTTPTool("pay", false).Spec(), wantReason: exagentv1.ReasonDefinitionChanged},
		"model changed":      {s: s, agent: MakeAgent().ModelName("m").HTTPTool("search", false).HTTPTool("pay", false).Spec(), wantReason: exagentv1.ReasonDefinitionChanged},
		"binding omitted":    {s: Status{Phase: exagentv1.PhaseQueued}, agent: MakeAgent().Spec(), wantReason: exagentv1.ReasonInvalidContinuation},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckDrift(tc.s, mustEnv(t, tc.agent, MakeRun().Spec()))
			if tc.wantReason == "" {
				if err != nil {
					t.Fatalf("CheckDrift: %v", err)
				}
				return
			}
			e, ok := AsError(err)
			if !ok || e.Reason != tc.wantReason || e.Kind != KindInvalidContinuation {
				t.Fatalf("error = %v, want InvalidContinuation/%s", err, tc.wantReason)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	err := fmt.Errorf("commit: %w", conflictf("x %d", 1))
	cases := map[string]struct {
		err                     error
		target                  error
		wantIs, wantPermanent   bool
		wantMessage, wantIsKind string
	}{
		"wrapped conflict":   {err: err, target: ErrConflict, wantIs: true, wantMessage: "commit: Conflict: x 1", wantIsKind: "Conflict"},
		"other kind":         {err: err, target: ErrExpired, wantMessage: "commit: Conflict: x 1", wantIsKind: "Conflict"},
		"invalid permanent":  {err: invalidf("gone"), target: ErrInvalidContinuation, wantIs: true, wantPermanent: true, wantMessage: "InvalidContinuation: gone", wantIsKind: "InvalidContinuation"},
		"too large":          {err: &Error{Kind: KindTooLarge}, target: ErrTooLarge, wantIs: true, wantPermanent: true, wantMessage: "TooLarge", wantIsKind: "TooLarge"},
		"limit":              {err: ErrLimitExceeded, target: ErrLimitExceeded, wantIs: true, wantPermanent: true, wantMessage: "LimitExceeded", wantIsKind: "LimitExceeded"},
		"stale":              {err: staleFencef("s"), target: ErrStaleFence, wantIs: true, wantMessage: "StaleFence: s", wantIsKind: "StaleFence"},
		"plain error":        {err: errors.New("x"), target: ErrConflict, wantMessage: "x"},
		"sentinels distinct": {err: ErrNotPending, target: ErrUncertain, wantMessage: "NotPending", wantIsKind: "NotPending"},
		"forbidden":          {err: ErrForbidden, target: ErrForbidden, wantIs: true, wantMessage: "Forbidden", wantIsKind: "Forbidden"},
		"expired":            {err: ErrExpired, target: ErrExpired, wantIs: true, wantMessage: "Expired", wantIsKind: "Expired"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kind := ""
			if e, ok := AsError(tc.err); ok {
				kind = string(e.Kind)
				if !IsKind(tc.err, e.Kind) {
					t.Errorf("IsKind(err, %s) = false", e.Kind)
				}
			}
			got := []any{errors.Is(tc.err, tc.target), IsPermanent(tc.err), tc.err.Error(), kind}
			want := []any{tc.wantIs, tc.wantPermanent, tc.wantMessage, tc.wantIsKind}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
