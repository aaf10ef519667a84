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
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// budgetsOptions lists the AgentBudgets of one namespace or all of them,
// with the spend their statuses say against each limit.
type budgetsOptions struct {
	genericiooptions.IOStreams
	AllNamespaces bool

	namespace string
	client    client.Client
	clock     clock.PassiveClock
}

func newBudgetsCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &budgetsOptions{IOStreams: streams, clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:     "budgets [-A]",
		Aliases: []string{"budget"},
		Short:   "List the AgentBudgets and their spend against each limit",
		Long: `List the AgentBudgets of the namespace (or, with -A, of all namespaces): the
Agents each selects, and for each limit it sets the spend against it as the
budget's status says — used/max (percent), and when its window rolls over
(maxConcurrentRuns frees as runs end) — and EXHAUSTED, the limits used up:
while one is, new runs of the selected Agents wait Queued with reason
BudgetExhausted (kubectl approve list shows them).

The spend is the budget controller's (status.limits), computed from the
runs' ledgers; a limit not computed yet shows <pending>. Reading budgets
needs the exagent-viewer role (or view) in the namespace.`,
		Example: `  kubectl approve budgets
  kubectl approve budgets -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the budgets of all namespaces.")
	return cmd
}

// Complete resolves the namespace and the client.
func (o *budgetsOptions) Complete(f *factory, _ *cobra.Command, _ []string) error {
	var err error
	if !o.AllNamespaces {
		if o.namespace, err = f.Namespace(); err != nil {
			return err
		}
	}
	o.client, err = f.Client()
	return err
}

// Validate has nothing to check.
func (o *budgetsOptions) Validate() error { return nil }

// Run lists the budgets and prints them.
func (o *budgetsOptions) Run(ctx context.Context) error {
	var list exagentv1.AgentBudgetList
	var opts []client.ListOption
	if o.namespace != "" {
		opts = append(opts, client.InNamespace(o.namespace))
	}
	if err := o.client.List(ctx, &list, opts...); err != nil {
		return fmt.Errorf("listing AgentBudgets: %w", err)
	}
	if len(list.Items) == 0 {
		if o.namespace == "" {
			_, err := fmt.Fprintln(o.ErrOut, "No AgentBudgets found.")
			return err
		}
		_, err := fmt.Fprintf(o.ErrOut, "No AgentBudgets in %s namespace.\n", o.namespace)
		return err
	}
	return printBudgetTable(o.Out, list.Items, o.clock.Now())
}

// budgetLimits are the limits of a budget, in the order of the columns.
var budgetLimits = []struct{ name, column string }{
	{exagentv1.BudgetTokensPerDay, "TOKENS/DAY"},
	{exagentv1.BudgetRunsPerHour, "RUNS/HOUR"},
	{exagentv1.BudgetMaxConcurrentRuns, "CONCURRENT"},
	{exagentv1.BudgetCostPerMonth, "COST/MONTH"},
}

// printBudgetTable writes budgets as kubectl-style columns, sorted by
// namespace and name: a column per limit some budget sets.
func printBudgetTable(w io.Writer, budgets []exagentv1.AgentBudget, now time.Time) error {
	budgets = slices.Clone(budgets)
	slices.SortFunc(budgets, func(a, b exagentv1.AgentBudget) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var shown []int
	for i, l := range budgetLimits {
		for j := range budgets {
			if limitSet(&budgets[j].Spec, l.name) {
				shown = append(shown, i)
				break
			}
		}
	}
	tw := printers.GetNewTabWriter(w)
	cols := []string{"NAMESPACE", "NAME", "SELECTOR"}
	for _, i := range shown {
		cols = append(cols, budgetLimits[i].column)
	}
	cols = append(cols, "EXHAUSTED")
	if _, err := fmt.Fprintln(tw, strings.Join(cols, "\t")); err != nil {
		return err
	}
	for j := range budgets {
		b := &budgets[j]
		row := []string{b.Namespace, b.Name, selectorCell(b.Spec.AgentSelector)}
		var exhausted []string
		for _, i := range shown {
			row = append(row, limitCell(b, budgetLimits[i].name, now))
		}
		for _, l := range b.Status.Limits {
			if l.Percent >= 100 {
				exhausted = append(exhausted, l.Limit)
			}
		}
		if len(exhausted) == 0 {
			exhausted = []string{"-"}
		}
		row = append(row, strings.Join(exhausted, ","))
		if _, err := fmt.Fprintln(tw, strings.Join(row, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// limitSet tells whether spec sets limit.
func limitSet(spec *exagentv1.AgentBudgetSpec, limit string) bool {
	switch limit {
	case exagentv1.BudgetTokensPerDay:
		return spec.TokensPerDay != nil
	case exagentv1.BudgetRunsPerHour:
		return spec.RunsPerHour != nil
	case exagentv1.BudgetMaxConcurrentRuns:
		return spec.MaxConcurrentRuns != nil
	case exagentv1.BudgetCostPerMonth:
		return spec.CostPerMonth != nil
	}
	return false
}

// limitCell is one limit's cell: "150/200 (75%), rolls over in 14h" from
// the budget's status, "-" when the budget does not set the limit,
// <pending> when its status does not have it yet.
func limitCell(b *exagentv1.AgentBudget, limit string, now time.Time) string {
	if !limitSet(&b.Spec, limit) {
		return "-"
	}
	i := slices.IndexFunc(b.Status.Limits, func(l exagentv1.BudgetLimitUse) bool { return l.Limit == limit })
	if i < 0 {
		return "<pending>"
	}
	l := b.Status.Limits[i]
	cell := fmt.Sprintf("%s/%s (%d%%)", l.Used, l.Max, l.Percent)
	switch {
	case l.RollsOverAt == nil:
	case l.RollsOverAt.After(now):
		cell += ", rolls over in " + duration.HumanDuration(l.RollsOverAt.Sub(now))
	default:
		cell += ", rolling over"
	}
	return cell
}

// selectorCell is the SELECTOR column: the label selector, <all> when it
// selects every Agent of the namespace.
func selectorCell(sel *metav1.LabelSelector) string {
	if sel == nil {
		return "<all>"
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	switch {
	case err != nil:
		return "<invalid>"
	case s.Empty():
		return "<all>"
	}
	return s.String()
}
