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

	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
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

// decision is alice's Approve of approval a1 of run, at revision 1.
func decision(mut ...func(*exagentv1.ApprovalDecision)) *exagentv1.ApprovalDecision {
	return fixture.MakeDecision("d1", "ns", "run").
		Approve(exagentv1.Approval{ID: "a1", Revision: 1, PayloadHash: "sha256:p"}).
		Actor(exagentv1.Actor{Username: "alice"}).Apply(mut...).Obj()
}

// run is a run of payments awaiting the approval a1 of its call c1.
func run(mut ...func(*exagentv1.AgentRun)) *exagentv1.AgentRun {
	return fixture.MakeRun("run", "ns").Agent("payments").Input("pay the invoice").
		Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
		Call(exagentv1.ToolCall{ID: "c1", Tool: "pay", State: exagentv1.CallPending}).
		Approval(exagentv1.Approval{ID: "a1", CallID: "c1", PayloadHash: "sha256:p", Revision: 1, State: exagentv1.ApprovalPending}).
		Apply(mut...).Obj()
}

// agent is payments: one http tool, pay, asked before when over 100.
func agent(mut ...func(*exagentv1.Agent)) *exagentv1.Agent {
	return fixture.MakeAgent("payments", "ns").
		Tool(exagentv1.ToolSpec{
			Name:       "pay",
			Parameters: fixture.RawJSON(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
			HTTP:       &exagentv1.HTTPTool{URL: "http://127.0.0.1:1/pay"},
		}).
		Rule("big", exagentv1.PolicyAsk, "args.amount > 100", "pay").
		Apply(mut...).Obj()
}
