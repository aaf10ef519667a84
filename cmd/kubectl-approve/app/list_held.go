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
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/fields"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// heldRun is a run an AgentBudget holds: Queued with reason
// BudgetExhausted, its message naming the budget, the limit, its spend
// and when the window rolls over (loop.BudgetMessage).
type heldRun struct {
	Namespace string `json:"namespace"`
	Run       string `json:"run"`
	Agent     string `json:"agent"`
	Message   string `json:"message"`
}

// maxHeldLines bounds the lines list prints for held runs: a burst held
// by a used-up budget is one budget's story, not a page of lines.
const maxHeldLines = 20

// queued selects the runs waiting to start.
func queued() fields.Selector {
	return fields.OneTermEqualSelector(exagentv1.FieldStatusPhase, string(exagentv1.PhaseQueued))
}

// heldByBudget reads the Queued runs (of --agent if set) and keeps those
// an AgentBudget holds. A failure is a warning: the approvals are the list.
func (o *listOptions) heldByBudget(ctx context.Context) []heldRun {
	return heldRuns(o.extraRuns(ctx, queued(), "the runs held by budgets"))
}

// extraRuns reads the runs sel selects (of --agent if set) for the lines
// that follow the approvals. A failure is a warning naming what: the
// approvals are the list.
func (o *listOptions) extraRuns(ctx context.Context, sel fields.Selector, what string) []exagentv1.AgentRun {
	runs, _, err := o.runs.all(ctx, o.namespace, withAgent(sel, o.Agent))
	if err != nil {
		_, _ = fmt.Fprintf(o.ErrOut, "warning: listing %s: %v\n", what, err)
		return nil
	}
	return runs
}

// heldRuns are the runs among runs that a budget holds, in their order.
func heldRuns(runs []exagentv1.AgentRun) []heldRun {
	var out []heldRun
	for i := range runs {
		r := &runs[i]
		if r.Status.Phase == exagentv1.PhaseQueued && r.Status.Reason == exagentv1.ReasonBudgetExhausted {
			out = append(out, heldRun{Namespace: r.Namespace, Run: r.Name, Agent: r.Spec.AgentRef.Name, Message: r.Status.Message})
		}
	}
	return out
}

// printHeld writes one line per held run — "held by budget: RUN (MESSAGE)",
// the run as NAMESPACE/RUN when qualified — at most maxHeldLines, after a
// blank line when something was printed above.
func printHeld(w io.Writer, held []heldRun, qualified, gap bool) error {
	lines := make([]string, len(held))
	for i, h := range held {
		run := h.Run
		if qualified {
			run = h.Namespace + "/" + h.Run
		}
		lines[i] = fmt.Sprintf("held by budget: %s (%s)", run, h.Message)
	}
	return printBounded(w, lines, maxHeldLines, gap, "runs held by budgets (kubectl approve budgets)")
}

// printBounded writes lines, at most most of them and then how many more
// there are ("… and 3 more " + rest), after a blank line when gap is set;
// nothing at all when there are no lines.
func printBounded(w io.Writer, lines []string, most int, gap bool, rest string) error {
	if len(lines) == 0 {
		return nil
	}
	if gap {
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	for i, line := range lines {
		if i == most {
			_, err := fmt.Fprintf(w, "… and %d more %s\n", len(lines)-i, rest)
			return err
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
