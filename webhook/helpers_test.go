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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// errKeys reduces an ErrorList to "Type field" strings: what a user sees
// first, and stable under message rewording.
func errKeys(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s", string(e.Type), e.Field))
	}
	return out
}

func decision(mut ...func(*exagentv1.ApprovalDecision)) *exagentv1.ApprovalDecision {
	d := &exagentv1.ApprovalDecision{
		ObjectMeta: metav1.ObjectMeta{Name: "d1", Namespace: "ns"},
		Spec: exagentv1.ApprovalDecisionSpec{
			RunRef:      exagentv1.LocalObjectReference{Name: "run"},
			ApprovalID:  "a1",
			Decision:    exagentv1.DecisionApprove,
			Revision:    1,
			PayloadHash: "sha256:p",
			Actor:       &exagentv1.Actor{Username: "alice"},
		},
	}
	for _, m := range mut {
		m(d)
	}
	return d
}

func run(mut ...func(*exagentv1.AgentRun)) *exagentv1.AgentRun {
	r := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: "ns"},
		Spec: exagentv1.AgentRunSpec{
			AgentRef: exagentv1.LocalObjectReference{Name: "payments"},
			Input:    "pay the invoice",
		},
		Status: exagentv1.AgentRunStatus{
			Phase:    exagentv1.PhaseAwaitingApproval,
			Revision: 1,
			Calls:    []exagentv1.ToolCall{{ID: "c1", Tool: "pay", State: exagentv1.CallPending}},
			Approvals: []exagentv1.Approval{{
				ID: "a1", CallID: "c1", PayloadHash: "sha256:p", Revision: 1, State: exagentv1.ApprovalPending,
			}},
		},
	}
	for _, m := range mut {
		m(r)
	}
	return r
}

func agent(mut ...func(*exagentv1.Agent)) *exagentv1.Agent {
	a := &exagentv1.Agent{
		ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: "ns"},
		Spec: exagentv1.AgentSpec{
			Model: exagentv1.ModelSpec{
				Provider: exagentv1.ModelProviderScripted,
				Script:   []exagentv1.ScriptTurn{{Text: "done"}},
			},
			Tools: []exagentv1.ToolSpec{{
				Name:       "pay",
				Parameters: raw(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
				HTTP:       &exagentv1.HTTPTool{URL: "http://127.0.0.1:1/pay"},
			}},
			Policy: exagentv1.PolicySpec{
				Rules: []exagentv1.PolicyRule{{Name: "big", Tools: []string{"pay"}, Action: exagentv1.PolicyAsk, When: "args.amount > 100"}},
			},
		},
	}
	for _, m := range mut {
		m(a)
	}
	return a
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
