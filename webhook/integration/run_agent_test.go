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

package integration_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestAgentRunAdmission: requestedBy is the creating user's, never a
// client's claim; malformed durations are refused before any IO; a run of
// an Agent that does not exist yet is admitted (GitOps order).
func TestAgentRunAdmission(t *testing.T) {
	s := newScenario(t)
	newRun := func(name string, mut func(*exagentv1.AgentRun)) *exagentv1.AgentRun {
		r := &exagentv1.AgentRun{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "hello"},
		}
		if mut != nil {
			mut(r)
		}
		return r
	}
	cases := map[string]struct {
		run        *exagentv1.AgentRun
		wantDenied string
	}{
		"stamped requester": {run: newRun("r-plain", nil)},
		"a run before its Agent": {run: newRun("r-early", func(r *exagentv1.AgentRun) {
			r.Spec.AgentRef.Name = "not-applied-yet"
		})},
		"Never timeouts": {run: newRun("r-never", func(r *exagentv1.AgentRun) {
			r.Spec.ApprovalTimeout, r.Spec.ActiveTimeLimit = exagentv1.Never, exagentv1.Never
		})},
		"a forged requester": {
			run: newRun("r-forged", func(r *exagentv1.AgentRun) {
				r.Spec.RequestedBy = &exagentv1.Actor{Username: "alice"}
			}),
			wantDenied: `spec.requestedBy: Forbidden: is stamped from the authenticated user "dave"; a client-written identity ("alice") is not accepted`,
		},
		"a zero approval timeout": {
			run:        newRun("r-zero", func(r *exagentv1.AgentRun) { r.Spec.ApprovalTimeout = "0s" }),
			wantDenied: `spec.approvalTimeout: Invalid value: "0s": must be positive (use Never to disable)`,
		},
		"a lease that never ends": {
			run:        newRun("r-lease", func(r *exagentv1.AgentRun) { r.Spec.LeaseDuration = exagentv1.Never }),
			wantDenied: `spec.leaseDuration: Invalid value: "Never": cannot be Never`,
		},
		"a lease too short to keep": {
			run:        newRun("r-lease-short", func(r *exagentv1.AgentRun) { r.Spec.LeaseDuration = "10ms" }),
			wantDenied: `spec.leaseDuration: Invalid value: "10ms": must be at least 5s`,
		},
		"an invalid service account": {
			run:        newRun("r-sa", func(r *exagentv1.AgentRun) { r.Spec.ServiceAccountName = "Not_Valid" }),
			wantDenied: `spec.serviceAccountName`,
		},
	}
	dave := as(t, "dave")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := dave.Create(t.Context(), tc.run)
			if tc.wantDenied != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantDenied) {
					t.Fatalf("got %v, want denied with %q", err, tc.wantDenied)
				}
				assertAbsent(t, tc.run)
				return
			}
			if err != nil {
				t.Fatalf("denied: %v", err)
			}
			want := &exagentv1.Actor{Username: "dave", Groups: []string{"payments-approvers", "system:authenticated"},
				Credential: exagentv1.CredentialCertificate}
			if diff := cmp.Diff(want, tc.run.Spec.RequestedBy); diff != "" {
				t.Errorf("requestedBy (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("spec is immutable, even to the admin", func(t *testing.T) {
		r := newRun("r-immutable", nil)
		if err := dave.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		r.Spec.RequestedBy = &exagentv1.Actor{Username: "someone-else"}
		if err := admin.Update(t.Context(), r); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
			t.Fatalf("got %v, want spec is immutable", err)
		}
	})
}

// TestAgentAdmission: an Agent whose policy or tools the engine could not
// use is refused with the field that is wrong.
func TestAgentAdmission(t *testing.T) {
	ns := newNamespace(t)
	base := func(name string, mut func(*exagentv1.Agent)) *exagentv1.Agent {
		a := &exagentv1.Agent{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: exagentv1.AgentSpec{
				Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-4.1-mini"},
				Tools: []exagentv1.ToolSpec{{
					Name:       "pay",
					Parameters: fixture.RawJSON(`{"type":"object"}`),
					HTTP:       &exagentv1.HTTPTool{URL: "https://payments.example/pay"},
				}},
			},
		}
		mut(a)
		return a
	}
	cases := map[string]struct {
		agent      *exagentv1.Agent
		wantDenied string
	}{
		"valid": {agent: base("ok", func(a *exagentv1.Agent) {
			a.Spec.Policy.Rules = []exagentv1.PolicyRule{{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, When: "args.amount > 100"}}
		})},
		"a when that does not compile": {
			agent: base("bad-cel", func(a *exagentv1.Agent) {
				a.Spec.Policy.Rules = []exagentv1.PolicyRule{{Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, When: "args.amount >"}}
			}),
			wantDenied: `spec.policy.rules[0].when: Invalid value: "args.amount >": CEL:`,
		},
		"parameters that are not an object schema": {
			agent: base("bad-schema", func(a *exagentv1.Agent) {
				a.Spec.Tools[0].Parameters = fixture.RawJSON(`{"type":"object","properties":{"amount":{"type":"money"}}}`)
			}),
			wantDenied: `spec.tools[0].parameters.properties[amount].type: Invalid value: "money": got string, want array; ` +
				`value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`,
		},
		"parameters that refer to a remote schema": {
			agent: base("remote-ref", func(a *exagentv1.Agent) {
				a.Spec.Tools[0].Parameters = fixture.RawJSON(`{"type":"object","properties":{"amount":{"$ref":"https://schemas.example/amount.json"}}}`)
			}),
			wantDenied: `spec.tools[0].parameters: Invalid value: refers to "https://schemas.example/amount.json": a tool's parameters must be self-contained`,
		},
		"parameters whose maximum is not a number": {
			agent: base("bad-maximum", func(a *exagentv1.Agent) {
				a.Spec.Tools[0].Parameters = fixture.RawJSON(`{"type":"object","properties":{"amount":{"type":"integer","maximum":"ten"}}}`)
			}),
			wantDenied: `spec.tools[0].parameters.properties[amount].maximum: Invalid value: "ten": got string, want number`,
		},
		"a base URL with credentials": {
			agent:      base("bad-url", func(a *exagentv1.Agent) { a.Spec.Model.BaseURL = "https://key:secret@api.example/v1" }),
			wantDenied: `spec.model.baseURL`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := admin.Create(t.Context(), tc.agent)
			if tc.wantDenied == "" {
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantDenied) {
				t.Fatalf("got %v, want denied with %q", err, tc.wantDenied)
			}
			assertAbsent(t, tc.agent)
		})
	}
}
