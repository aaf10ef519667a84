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

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestCompilePolicy(t *testing.T) {
	rule := func(a exagentv1.PolicyAction, when string, tools ...string) exagentv1.PolicyRule {
		return exagentv1.PolicyRule{Tools: tools, Action: a, When: when}
	}
	cases := map[string]struct {
		spec    exagentv1.PolicySpec
		wantErr string
	}{
		"empty":         {},
		"valid rules":   {spec: exagentv1.PolicySpec{Default: exagentv1.PolicyDeny, Rules: []exagentv1.PolicyRule{rule(exagentv1.PolicyAllow, "args.amount < 100", "pay")}}},
		"dyn result ok": {spec: exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{rule(exagentv1.PolicyAllow, "args.flag", "*")}}},
		"bad default":   {spec: exagentv1.PolicySpec{Default: "Maybe"}, wantErr: "policy.default"},
		"bad onDeny":    {spec: exagentv1.PolicySpec{OnDeny: "Later"}, wantErr: "policy.onDeny"},
		"bad action":    {spec: exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{rule(exagentv1.PolicyAllow, "", "a"), rule("", "", "b")}}, wantErr: "policy.rules[1]: action"},
		"no tools":      {spec: exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{rule(exagentv1.PolicyAllow, "")}}, wantErr: "policy.rules[0]: tools"},
		"syntax error":  {spec: exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{rule(exagentv1.PolicyAllow, "", "a"), rule(exagentv1.PolicyAsk, "args.x >", "b")}}, wantErr: "policy.rules[1].when"},
		"not bool":      {spec: exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{rule(exagentv1.PolicyAllow, "1 + 2", "a")}}, wantErr: "policy.rules[0].when: must be a bool"},
		"unknown var":   {spec: exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{rule(exagentv1.PolicyAllow, "user == 'x'", "a")}}, wantErr: "policy.rules[0].when"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CompilePolicy(tc.spec)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CompilePolicy: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPolicyEvaluate(t *testing.T) {
	spec := exagentv1.PolicySpec{
		Default: exagentv1.PolicyDeny,
		Rules: []exagentv1.PolicyRule{
			{Name: "small-payments", Tools: []string{"pay"}, Action: exagentv1.PolicyAllow, When: "args.amount < 100"},
			{Name: "big-payments", Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, When: "args.amount >= 100"},
			{Tools: []string{"search", "fetch"}, Action: exagentv1.PolicyAllow},
			{Name: "never-delete", Tools: []string{"*"}, Action: exagentv1.PolicyDeny, When: "has(args.force) && args.force"},
			{Name: "ask-rest", Tools: []string{"*"}, Action: exagentv1.PolicyAsk, When: "args.mode == 'careful'"},
		},
	}
	p, err := CompilePolicy(spec)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		tool, args string
		want       exagentv1.PolicyAction
		wantRule   string
	}{
		"when true allows":             {tool: "pay", args: `{"amount":5}`, want: exagentv1.PolicyAllow, wantRule: "small-payments"},
		"second rule matches":          {tool: "pay", args: `{"amount":500}`, want: exagentv1.PolicyAsk, wantRule: "big-payments"},
		"missing key fails to Ask":     {tool: "pay", args: `{}`, want: exagentv1.PolicyAsk, wantRule: "small-payments"},
		"wrong type fails to Ask":      {tool: "pay", args: `{"amount":"lots"}`, want: exagentv1.PolicyAsk, wantRule: "small-payments"},
		"args not an object fails Ask": {tool: "pay", args: `[1,2]`, want: exagentv1.PolicyAsk, wantRule: "small-payments"},
		"args not json fails Ask":      {tool: "pay", args: `{`, want: exagentv1.PolicyAsk, wantRule: "small-payments"},
		"unnamed rule without when":    {tool: "fetch", args: `{}`, want: exagentv1.PolicyAllow, wantRule: "rules[2]"},
		"empty args are an object":     {tool: "search", args: ``, want: exagentv1.PolicyAllow, wantRule: "rules[2]"},
		"wildcard deny":                {tool: "delete", args: `{"force":true}`, want: exagentv1.PolicyDeny, wantRule: "never-delete"},
		"wildcard when false falls":    {tool: "delete", args: `{"force":false,"mode":"careful"}`, want: exagentv1.PolicyAsk, wantRule: "ask-rest"},
		"non-bool result fails Ask":    {tool: "delete", args: `{"force":"yes"}`, want: exagentv1.PolicyAsk, wantRule: "never-delete"},
		"default":                      {tool: "delete", args: `{"mode":"quick"}`, want: exagentv1.PolicyDeny, wantRule: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, rule := p.Evaluate(tc.tool, json.RawMessage(tc.args))
			if diff := cmp.Diff([]string{string(tc.want), tc.wantRule}, []string{string(got), rule}); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(spec, p.Spec()); diff != "" {
		t.Errorf("Spec() (-want +got):\n%s", diff)
	}
}

func TestPolicyDefaultIsAsk(t *testing.T) {
	p, err := CompilePolicy(exagentv1.PolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Evaluate("x", nil); got != exagentv1.PolicyAsk {
		t.Errorf("unset default = %s, want Ask", got)
	}
}

// A `when` that exceeds the cost limit fails to evaluate, hence Ask.
func TestPolicyCostLimit(t *testing.T) {
	p, err := CompilePolicy(exagentv1.PolicySpec{Default: exagentv1.PolicyDeny, Rules: []exagentv1.PolicyRule{{
		Tools: []string{"*"}, Action: exagentv1.PolicyAllow,
		When: "args.xs.all(a, args.xs.all(b, args.xs.all(c, a + b + c >= 0)))",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]int, 200)
	args, _ := json.Marshal(map[string]any{"xs": xs})
	if got, _ := p.Evaluate("t", args); got != exagentv1.PolicyAsk {
		t.Errorf("over-cost when = %s, want Ask", got)
	}
}

func TestAuthorize(t *testing.T) {
	run := MakeRun().Spec()
	ids := Identities{Namespace: "team", Manager: []string{"system:serviceaccount:exagent-system:exagent-manager"}}
	ownSA := MakeRun().Spec()
	ownSA.ServiceAccountName = "deployer"
	cases := map[string]struct {
		policy     exagentv1.PolicySpec
		run        *exagentv1.AgentRunSpec
		ids        *Identities
		actor      exagentv1.Actor
		wantErr    string
		wantReason string
	}{
		"no approvers: RBAC alone":  {actor: actor("bob")},
		"empty approvers":           {policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{}}, actor: actor("bob")},
		"no actor":                  {wantErr: "no authenticated actor"},
		"user listed":               {policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{Users: []string{"alice"}}}, actor: actor("alice")},
		"user not listed":           {policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{Users: []string{"alice"}}}, actor: actor("bob"), wantErr: `user "bob" is not in policy.approvers`},
		"group listed":              {policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{Groups: []string{"sre"}}}, actor: exagentv1.Actor{Username: "bob", Groups: []string{"dev", "sre"}}},
		"service account listed":    {policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{ServiceAccounts: []string{"ops/bot"}}}, actor: actor("system:serviceaccount:ops:bot")},
		"service account other ns":  {policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{ServiceAccounts: []string{"ops/bot"}}}, actor: actor("system:serviceaccount:dev:bot"), wantErr: "serviceAccounts: [ops/bot]"},
		"malformed service account": {policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{ServiceAccounts: []string{"ops/bot"}}}, actor: actor("system:serviceaccount:opsbot"), wantErr: "is not in policy.approvers"},
		"self approval allowed":     {actor: actor("requester")},
		"self approval forbidden":   {policy: exagentv1.PolicySpec{ForbidSelfApproval: true}, actor: actor("requester"), wantErr: "forbidSelfApproval"},
		"self by impersonation":     {policy: exagentv1.PolicySpec{ForbidSelfApproval: true}, actor: exagentv1.Actor{Username: "x", Impersonated: true, ImpersonatedBy: "requester"}, wantErr: "forbidSelfApproval"},
		"other with forbid self":    {policy: exagentv1.PolicySpec{ForbidSelfApproval: true}, actor: actor("alice")},
		"the run's default ServiceAccount": {
			actor: actor("system:serviceaccount:team:default"), wantReason: exagentv1.ReasonNeverADecider,
			wantErr: `user "system:serviceaccount:team:default" is the run's own ServiceAccount (spec.serviceAccountName "default")`,
		},
		"the run's named ServiceAccount, even when listed as an approver": {
			policy: exagentv1.PolicySpec{Approvers: &exagentv1.Approvers{ServiceAccounts: []string{"team/deployer"}}},
			run:    ownSA, actor: actor("system:serviceaccount:team:deployer"), wantReason: exagentv1.ReasonNeverADecider,
			wantErr: `is the run's own ServiceAccount (spec.serviceAccountName "deployer")`,
		},
		"another namespace's ServiceAccount of the same name":  {actor: actor("system:serviceaccount:ops:default")},
		"another ServiceAccount of the run's namespace":        {run: ownSA, actor: actor("system:serviceaccount:team:default")},
		"namespace unknown: every ServiceAccount of that name": {ids: &Identities{}, actor: actor("system:serviceaccount:ops:default"), wantReason: exagentv1.ReasonNeverADecider, wantErr: "own ServiceAccount"},
		"the manager": {
			actor: actor("system:serviceaccount:exagent-system:exagent-manager"), wantReason: exagentv1.ReasonNeverADecider,
			wantErr: `user "system:serviceaccount:exagent-system:exagent-manager" is the exagent manager's own identity`,
		},
		"standing in for the manager": {
			actor:      exagentv1.Actor{Username: "alice", Impersonated: true, ImpersonatedBy: "system:serviceaccount:exagent-system:exagent-manager"},
			wantReason: exagentv1.ReasonNeverADecider, wantErr: "manager's own identity",
		},
		"requester not sealed, forbidSelfApproval: fails closed": {
			policy: exagentv1.PolicySpec{ForbidSelfApproval: true}, ids: &Identities{Namespace: "team", RequesterUnverified: "no seal"},
			actor: actor("alice"), wantReason: exagentv1.ReasonSelfApproval,
			wantErr: "forbidSelfApproval: the run's requester is unknown (no seal)",
		},
		"requester not sealed, self approval allowed": {ids: &Identities{Namespace: "team", RequesterUnverified: "no seal"}, actor: actor("alice")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, id := run, ids
			if tc.run != nil {
				r = tc.run
			}
			if tc.ids != nil {
				id = *tc.ids
			}
			err := Authorize(tc.policy, r, id, tc.actor)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Authorize: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !IsKind(err, KindForbidden) {
				t.Fatalf("error = %v, want Forbidden containing %q", err, tc.wantErr)
			}
			if e, _ := AsError(err); tc.wantReason != "" && e.Reason != tc.wantReason {
				t.Errorf("reason = %s, want %s", e.Reason, tc.wantReason)
			}
		})
	}
}

func TestActorString(t *testing.T) {
	cases := map[string]struct {
		a    *exagentv1.Actor
		want string
	}{
		"nil":          {want: "unknown"},
		"plain":        {a: &exagentv1.Actor{Username: "a"}, want: "a"},
		"impersonated": {a: &exagentv1.Actor{Username: "a", Impersonated: true, ImpersonatedBy: "b"}, want: "a (impersonated by b)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := actorString(tc.a); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
