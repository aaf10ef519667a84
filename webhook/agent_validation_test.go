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

package webhook_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/webhook"
)

func TestValidateAgent(t *testing.T) {
	openAI := func(a *exagentv1.Agent) {
		a.Spec.Model = exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-4.1-mini"}
	}
	params := func(s string) func(*exagentv1.Agent) {
		return func(a *exagentv1.Agent) { a.Spec.Tools[0].Parameters = fixture.RawJSON(s) }
	}
	rule := func(r exagentv1.PolicyRule) func(*exagentv1.Agent) {
		return func(a *exagentv1.Agent) { a.Spec.Policy.Rules = []exagentv1.PolicyRule{r} }
	}
	cases := map[string]struct {
		agent *exagentv1.Agent
		want  []string
	}{
		"scripted":                         {agent: agent()},
		"openai with the default endpoint": {agent: agent(openAI)},
		"openai with a base URL": {agent: agent(openAI, func(a *exagentv1.Agent) {
			a.Spec.Model.BaseURL = "http://127.0.0.1:8080/v1"
			a.Spec.Model.APIKeySecretRef = &exagentv1.SecretKeySelector{Name: "openai", Key: "api-key"}
		})},
		"openai without a model name": {
			agent: agent(openAI, func(a *exagentv1.Agent) { a.Spec.Model.Name = "" }),
			want:  []string{"FieldValueRequired spec.model.name"},
		},
		"openai with a script": {
			agent: agent(openAI, func(a *exagentv1.Agent) { a.Spec.Model.Script = []exagentv1.ScriptTurn{{Text: "x"}} }),
			want:  []string{"FieldValueForbidden spec.model.script"},
		},
		"openai with a bad base URL": {
			agent: agent(openAI, func(a *exagentv1.Agent) { a.Spec.Model.BaseURL = "http://user:pw@host/v1" }),
			want:  []string{"FieldValueInvalid spec.model.baseURL"},
		},
		"scripted without a script": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Model.Script = nil }),
			want:  []string{"FieldValueRequired spec.model.script"},
		},
		"script arguments must be an object": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Model.Script = []exagentv1.ScriptTurn{{ToolCalls: []exagentv1.ScriptToolCall{{Name: "pay", Arguments: fixture.RawJSON(`[1]`)}}}}
			}),
			want: []string{"FieldValueInvalid spec.model.script[0].toolCalls[0].arguments"},
		},
		"unknown provider": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Model.Provider = "Oracle" }),
			want:  []string{"FieldValueNotSupported spec.model.provider"},
		},
		"builtin kind without its group": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "scale", Builtin: &exagentv1.BuiltinTool{
					Operation: exagentv1.BuiltinScale, Kinds: []string{"Deployment.apps", "Deployment", "ConfigMap"}}})
			}),
			want: []string{"FieldValueInvalid spec.tools[1].builtin.kinds[1]"},
		},
		// Secrets in builtin kinds, however spelled, only with allowSecrets:
		// a Get puts their data in a transcript every viewer can read.
		"builtin Secret kinds without allowSecrets": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "read", Builtin: &exagentv1.BuiltinTool{
					Operation: exagentv1.BuiltinGet, Kinds: []string{"ConfigMap", "Secret", "SECRET", "Secrets", "Secret.core", "SealedSecret.bitnami.com"}}})
			}),
			want: []string{
				"FieldValueForbidden spec.tools[1].builtin.kinds[1]", "FieldValueForbidden spec.tools[1].builtin.kinds[2]",
				"FieldValueForbidden spec.tools[1].builtin.kinds[3]", "FieldValueForbidden spec.tools[1].builtin.kinds[4]",
			},
		},
		"builtin Secret kind with allowSecrets": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Tools = append(a.Spec.Tools, exagentv1.ToolSpec{Name: "read", Builtin: &exagentv1.BuiltinTool{
					Operation: exagentv1.BuiltinGet, Kinds: []string{"Secret"}, AllowSecrets: true}})
			}),
		},
		"duplicate tool names": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Tools = append(a.Spec.Tools, a.Spec.Tools[0]) }),
			want:  []string{"FieldValueDuplicate spec.tools[1].name"},
		},
		"a tool with two implementations": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Tools[0].MCP = &exagentv1.MCPTool{URL: "http://mcp"} }),
			want:  []string{"FieldValueForbidden spec.tools[0].parameters", "FieldValueInvalid spec.tools[0]"},
		},
		"a tool with none": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Tools[0].HTTP = nil }),
			want:  []string{"FieldValueInvalid spec.tools[0]"},
		},
		"http timeout cannot be Never": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Tools[0].HTTP.Timeout = exagentv1.Never }),
			want:  []string{"FieldValueInvalid spec.tools[0].http.timeout"},
		},
		"parameters are not an object schema": {
			agent: agent(params(`{"type":"string"}`)),
			want:  []string{"FieldValueInvalid spec.tools[0].parameters.type"},
		},
		"parameters without a type": {
			agent: agent(params(`{"properties":{}}`)),
			want:  []string{"FieldValueRequired spec.tools[0].parameters.type"},
		},
		"parameters are not JSON Schema": {
			agent: agent(params(`[1,2]`)),
			want:  []string{"FieldValueInvalid spec.tools[0].parameters"},
		},
		"nested schema errors name their path": {
			agent: agent(params(`{"type":"object","properties":{"amount":{"type":"money"},"tags":{"type":"array","items":{"type":7}}},"required":"amount"}`)),
			want: []string{
				"FieldValueInvalid spec.tools[0].parameters.properties[amount].type",
				"FieldValueInvalid spec.tools[0].parameters.properties[tags].items.type",
				"FieldValueInvalid spec.tools[0].parameters.required",
			},
		},
		"a remote $ref": {
			agent: agent(params(`{"type":"object","properties":{"amount":{"$ref":"https://schemas.example/amount.json"}}}`)),
			want:  []string{"FieldValueInvalid spec.tools[0].parameters"},
		},
		"a pattern the validator cannot run": {
			agent: agent(params(`{"type":"object","properties":{"id":{"type":"string","pattern":"^(?!x)"}}}`)),
			want:  []string{"FieldValueInvalid spec.tools[0].parameters.properties[id].pattern"},
		},
		"local references and draft-07": {
			agent: agent(params(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/definitions/n"}}}`)),
		},
		"a rich valid schema": {
			agent: agent(params(`{"type":"object","additionalProperties":false,"properties":{"to":{"type":["string","null"],"enum":["a","b",null]},"n":{"type":"integer","minimum":1,"maxLength":3},"o":{"anyOf":[{"type":"string"},true]}},"required":["to"]}`)),
		},
		"CEL that does not compile": {
			agent: agent(rule(exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, When: "args.amount >"})),
			want:  []string{"FieldValueInvalid spec.policy.rules[0].when"},
		},
		"CEL that is not a bool": {
			agent: agent(rule(exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, When: `"yes"`})),
			want:  []string{"FieldValueInvalid spec.policy.rules[0].when"},
		},
		"CEL over an unknown variable": {
			agent: agent(rule(exagentv1.PolicyRule{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, When: "request.user == 'x'"})),
			want:  []string{"FieldValueInvalid spec.policy.rules[0].when"},
		},
		"rule without tools or action": {
			agent: agent(rule(exagentv1.PolicyRule{})),
			want:  []string{"FieldValueRequired spec.policy.rules[0].tools", "FieldValueNotSupported spec.policy.rules[0].action"},
		},
		"duplicate rule names": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Policy.Rules = append(a.Spec.Policy.Rules, a.Spec.Policy.Rules[0]) }),
			want:  []string{"FieldValueDuplicate spec.policy.rules[1].name"},
		},
		"approvers": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Policy.Approvers = &exagentv1.Approvers{Users: []string{"alice"}, Groups: []string{"g"}, ServiceAccounts: []string{"ops/releaser"}}
			}),
		},
		"a service account approver is namespace/name": {
			agent: agent(func(a *exagentv1.Agent) {
				a.Spec.Policy.Approvers = &exagentv1.Approvers{ServiceAccounts: []string{"releaser", "Ops/x"}}
			}),
			want: []string{"FieldValueInvalid spec.policy.approvers.serviceAccounts[0]", "FieldValueInvalid spec.policy.approvers.serviceAccounts[1]"},
		},
		"limits": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.ActiveTime = "0s" }),
			want:  []string{"FieldValueInvalid spec.limits.activeTime"},
		},
		"maxWait": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxWait = "72h" }),
		},
		"maxWait Never": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxWait = exagentv1.Never }),
		},
		"maxWait negative": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxWait = "-1h" }),
			want:  []string{"FieldValueInvalid spec.limits.maxWait"},
		},
		"maxWait not a duration": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxWait = "a day" }),
			want:  []string{"FieldValueInvalid spec.limits.maxWait"},
		},
		"maxRuns within its bounds": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxRuns = new(int32(exagentv1.MaxTreeRuns)) }),
		},
		"maxRuns 0: no delegation": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxRuns = new(int32(0)) }),
		},
		"maxRuns past its bound": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxRuns = new(int32(exagentv1.MaxTreeRuns + 1)) }),
			want:  []string{"FieldValueInvalid spec.limits.maxRuns"},
		},
		"maxRuns negative": {
			agent: agent(func(a *exagentv1.Agent) { a.Spec.Limits.MaxRuns = new(int32(-1)) }),
			want:  []string{"FieldValueInvalid spec.limits.maxRuns"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errKeys(webhook.ValidateAgent(tc.agent, nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// The messages a user reads: the path into the schema, the value and the
// meta-schema's reason, from the same library the engine validates
// arguments with.
func TestValidateParametersMessages(t *testing.T) {
	cases := map[string]struct {
		schema string
		want   []string
	}{
		"unknown type name": {schema: `{"type":"object","properties":{"amount":{"type":"money"}}}`, want: []string{
			`spec.tools[0].parameters.properties[amount].type: Invalid value: "money": got string, want array; ` +
				`value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`,
		}},
		"required is a list": {schema: `{"type":"object","required":"amount"}`, want: []string{
			`spec.tools[0].parameters.required: Invalid value: "amount": got string, want array`,
		}},
		"negative bound in a tuple item": {schema: `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"string","maxLength":-1}]}}}`, want: []string{
			`spec.tools[0].parameters.properties[p].prefixItems[0].maxLength: Invalid value: -1: minimum: got -1, want 0`,
		}},
		"a property named like a keyword is a key": {schema: `{"type":"object","properties":{"properties":{"type":7}}}`, want: []string{
			`spec.tools[0].parameters.properties[properties].type: Invalid value: 7: got number, want array; ` +
				`value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`,
		}},
		"remote $ref": {schema: `{"type":"object","properties":{"a":{"$ref":"https://schemas.example/a.json"}}}`, want: []string{
			`spec.tools[0].parameters: Invalid value: refers to "https://schemas.example/a.json": a tool's parameters must be self-contained — ` +
				`only references inside the schema (#/$defs/…) and the JSON Schema meta-schemas resolve; remote and file URLs are never loaded`,
		}},
		"file $ref": {schema: `{"type":"object","properties":{"a":{"$ref":"file:///etc/hostname"}}}`, want: []string{
			`spec.tools[0].parameters: Invalid value: refers to "file:///etc/hostname": a tool's parameters must be self-contained — ` +
				`only references inside the schema (#/$defs/…) and the JSON Schema meta-schemas resolve; remote and file URLs are never loaded`,
		}},
		"too deep": {schema: `{"type":"object","properties":{"a":` + strings.Repeat(`{"items":`, 70) + `true` + strings.Repeat(`}`, 70) + `}}`, want: []string{
			`spec.tools[0].parameters: Invalid value: nests 72 levels deep, more than 64`,
		}},
		"not an object schema": {schema: `{"type":["object","null"]}`, want: []string{
			`spec.tools[0].parameters.type: Invalid value: a tool's parameters must be an object schema: type must be "object"`,
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := agent(func(a *exagentv1.Agent) { a.Spec.Tools[0].Parameters = fixture.RawJSON(tc.schema) })
			var got []string
			for _, e := range webhook.ValidateAgent(a, nil) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
