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

package app

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func budget(ns, name string, sel *metav1.LabelSelector, spec exagentv1.AgentBudgetSpec, limits ...exagentv1.BudgetLimitUse) exagentv1.AgentBudget {
	spec.AgentSelector = sel
	return exagentv1.AgentBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec,
		Status: exagentv1.AgentBudgetStatus{Limits: limits}}
}

func use(limit, used, maxv string, pct int32, rolls time.Duration) exagentv1.BudgetLimitUse {
	u := exagentv1.BudgetLimitUse{Limit: limit, Used: used, Max: maxv, Percent: pct}
	if rolls != 0 {
		at := metav1.NewTime(t0.Add(rolls))
		u.RollsOverAt = &at
	}
	return u
}

func TestPrintBudgetTable(t *testing.T) {
	teamA := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	budgets := []exagentv1.AgentBudget{
		budget("demo", "team-a", teamA, exagentv1.AgentBudgetSpec{TokensPerDay: new(int64(100000)), MaxConcurrentRuns: new(int32(2))},
			use(exagentv1.BudgetTokensPerDay, "100412", "100000", 100, 12*time.Hour),
			use(exagentv1.BudgetMaxConcurrentRuns, "1", "2", 50, 0)),
		budget("demo", "fresh", nil, exagentv1.AgentBudgetSpec{TokensPerDay: new(int64(5))}),
		budget("a-team", "monthly", &metav1.LabelSelector{}, exagentv1.AgentBudgetSpec{CostPerMonth: new("50")},
			use(exagentv1.BudgetCostPerMonth, "12.5", "50", 25, -time.Second)),
	}
	var b bytes.Buffer
	if err := printBudgetTable(&b, budgets, t0); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   NAME      SELECTOR   TOKENS/DAY                                CONCURRENT   COST/MONTH                    EXHAUSTED
a-team      monthly   <all>      -                                         -            12.5/50 (25%), rolling over   -
demo        fresh     <all>      <pending>                                 -            -                             -
demo        team-a    team=a     100412/100000 (100%), rolls over in 12h   1/2 (50%)    -                             tokensPerDay
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if budgets[0].Name != "team-a" {
		t.Error("printBudgetTable sorted its caller's slice")
	}
}

func TestListHeldByBudget(t *testing.T) {
	approvals := pendingApprovals([]exagentv1.AgentRun{
		*makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(1).
			Call(call("call-0-0", "scale", `{"name":"web"}`, exagentv1.CallPending)).
			Approval(approval("call-0-0", "call-0-0", 1, exagentv1.ApprovalPending, time.Minute, time.Hour)).Obj(),
	})
	msg := "AgentBudget demo/team-a: tokensPerDay 100000 used 100412; the window rolls over at 2026-03-02T00:00:00Z, or raise spec.tokensPerDay"
	nightly := makeRun("nightly", "demo").Phase(exagentv1.PhaseQueued).Obj()
	nightly.Status.Reason, nightly.Status.Message = exagentv1.ReasonBudgetExhausted, msg
	queuedRun := makeRun("next", "demo").Phase(exagentv1.PhaseQueued).Obj()
	held := heldRuns([]exagentv1.AgentRun{*queuedRun, *nightly})
	if len(held) != 1 || held[0].Run != "nightly" || held[0].Agent != "ops" {
		t.Fatalf("heldRuns = %+v, want nightly alone (next is Queued for no budget)", held)
	}
	many := make([]heldRun, maxHeldLines+3)
	for i := range many {
		many[i] = heldRun{Namespace: "demo", Run: fmt.Sprintf("r%d", i), Message: "m"}
	}
	tests := map[string]struct {
		rows       []pendingApproval
		held       []heldRun
		namespace  string
		output     string
		wantOut    string
		wantErrOut string
	}{
		"after the approvals": {rows: approvals, held: held, namespace: "demo", wantOut: `NAMESPACE   RUN         APPROVAL   TOOL    ARGS             REQUESTED   EXPIRES
demo        scale-web   call-0-0   scale   {"name":"web"}   60s         in 60m

held by budget: nightly (` + msg + `)
`},
		"no approvals, all namespaces": {held: held, wantErrOut: "No pending approvals found.\n",
			wantOut: "held by budget: demo/nightly (" + msg + ")\n"},
		"bounded": {held: many, namespace: "demo", wantErrOut: "No pending approvals in demo namespace.\n",
			wantOut: func() string {
				var b strings.Builder
				for i := range maxHeldLines {
					fmt.Fprintf(&b, "held by budget: r%d (m)\n", i)
				}
				return b.String() + "… and 3 more runs held by budgets (kubectl approve budgets)\n"
			}()},
		"json": {output: "json", held: held, wantOut: `{
    "items": [],
    "heldByBudget": [
        {
            "namespace": "demo",
            "run": "nightly",
            "agent": "ops",
            "message": "` + msg + `"
        }
    ]
}
`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := &listOptions{Output: tc.output, namespace: tc.namespace, held: tc.held, clock: fixedClock{}}
			o.Out, o.ErrOut = &out, &errOut
			if err := o.print(tc.rows); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantOut, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrOut, errOut.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}
