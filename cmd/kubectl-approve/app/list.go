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
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// listOptions lists pending approvals of one namespace or all of them.
type listOptions struct {
	genericiooptions.IOStreams
	AllNamespaces bool
	Output        string
	// Agent narrows the list to the runs of one Agent (by field selector).
	Agent string
	// Watch keeps printing approvals as runs start waiting, after the
	// list (list_watch.go).
	Watch bool
	// Conversations lists the conversations held up by a person instead
	// of the approvals (list_conversations.go).
	Conversations bool

	namespace string
	client    client.WithWatch
	runs      *runLister
	clock     clock.PassiveClock
	// Budgets: also list the runs AgentBudgets hold (one more read).
	Budgets bool
	// held are the runs AgentBudgets hold, printed after the approvals
	// (list_held.go).
	held []heldRun
	// Waiting: also list the runs that wait on a timer, an object or a
	// callback (one more read).
	Waiting bool
	// waits are their waiting calls, printed last (list_waiting.go).
	waits []waitingRun
}

func newListCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &listOptions{IOStreams: streams, clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:     "list [-A]",
		Aliases: []string{"ls"},
		Short:   "List the approvals runs are waiting for",
		Long: `List every pending approval of the runs in the namespace (or, with -A, in all
namespaces): the run, the approval id, the tool and its arguments, when it
was requested and when it expires. Only the runs waiting for approval are
read (a field selector on status.phase, in pages of 500), however many runs
the namespace holds. With -w, approvals are printed as runs start waiting.

With --budgets, the runs an AgentBudget holds (Queued, reason
BudgetExhausted) follow the approvals, one line each — "held by budget: RUN
(AgentBudget …: the limit, its spend and when it rolls over)" — read as the
Queued runs (one more field-selected list, so only when asked; not with
-w). kubectl approve budgets shows the budgets themselves.

With --waiting, the runs that wait on the world (phase Waiting: a Sleep, a
WaitFor or a WaitForCallback) follow, one line per waiting call — "waiting:
RUN CALL (TOOL) KIND WHAT until TIME (in 42m)" — the soonest first (one more
field-selected list, only when asked; not with -w). Nobody has to act on
them: they resume on their own; kubectl approve cancel RUN stops one.

An approval of a run that is a turn of a conversation also holds up the
conversation's later turns: a CONVERSATION column then names it ("billing
#3": the conversation and the turn's place). --conversations lists the
conversations held up by a person instead — the open turn waits for a
decision, an answer (a human participant's turn is a question) or a
resolve — one row each, with what it waits for and how many turns queue
behind it.`,
		Example: `  kubectl approve list
  kubectl approve list -A -o wide
  kubectl approve list --agent payments -w
  kubectl approve list --conversations -A
  kubectl approve list --budgets
  kubectl approve list --waiting -A
  kubectl approve list -o json | jq -r '.items[] | "\(.run) \(.approval)"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List pending approvals across all namespaces.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: wide, json or yaml.")
	cmd.Flags().StringVar(&o.Agent, "agent", "", "List only the approvals of runs of this Agent.")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "After listing, watch for runs that start waiting and print their approvals.")
	cmd.Flags().BoolVar(&o.Budgets, "budgets", false, "After the approvals, list the runs an AgentBudget holds (Queued, BudgetExhausted) with the budget and limit that hold them.")
	cmd.Flags().BoolVar(&o.Waiting, "waiting", false, "After the approvals, list the runs that wait on a timer, an object or a callback (phase Waiting), with what each waits for and until when.")
	cmd.Flags().BoolVar(&o.Conversations, "conversations", false, "List the conversations held up by a person (their open turn waits for a decision, an answer or a resolve) instead of the approvals.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"wide", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete resolves the namespace and the client.
func (o *listOptions) Complete(f *factory, _ *cobra.Command, _ []string) error {
	var err error
	if !o.AllNamespaces {
		if o.namespace, err = f.Namespace(); err != nil {
			return err
		}
	}
	if o.client, err = f.WatchClient(); err != nil {
		return err
	}
	o.runs = &runLister{c: o.client, warn: o.ErrOut}
	return nil
}

// Validate checks the output format.
func (o *listOptions) Validate() error {
	if (o.Waiting || o.Budgets) && o.Conversations {
		return fmt.Errorf("--conversations lists conversations only: --waiting and --budgets add runs to the approvals")
	}
	if o.Conversations && o.Watch {
		return fmt.Errorf("--conversations lists once; -w follows approvals (kubectl get conv -w follows conversations)")
	}
	switch o.Output {
	case "", "wide", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,wide,yaml", o.Output)
}

// Run lists the runs waiting for approval and prints their pending
// approvals; with --watch it goes on with the runs that start waiting.
func (o *listOptions) Run(ctx context.Context) error {
	if o.Conversations {
		return o.runConversations(ctx)
	}
	segments := newSegmentReader(o.client)
	runs, rv, err := o.runs.all(ctx, o.namespace, o.selector())
	if err != nil {
		return fmt.Errorf("listing runs: %w", err)
	}
	rows := o.rows(ctx, segments, runs, runs)
	if o.Budgets && !o.Watch {
		o.held = o.heldByBudget(ctx)
	}
	if o.Waiting && !o.Watch {
		o.waits = o.waitingRuns(ctx)
	}
	if len(rows) == 0 && len(o.held) == 0 && len(o.waits) == 0 && o.namespace != "" {
		// Nothing waits: say so when the reason is that nothing serves
		// the namespace (one more small request, only then).
		if u := unservedRun(ctx, o.client, o.namespace); u != nil {
			_, _ = fmt.Fprintf(o.ErrOut, "warning: %s.\n", notServedSentence(u))
		}
	}
	if o.Watch {
		return o.watch(ctx, segments, runs, rows, rv)
	}
	return o.print(rows)
}

// selector is what the apiserver is asked for: the runs waiting for
// approval, of --agent if set.
func (o *listOptions) selector() fields.Selector {
	return withAgent(awaitingApproval(), o.Agent)
}

// rows are the pending approvals of changed, with their sealed arguments
// read back and their paths from the root over known (and, past what
// known holds, the ancestors read by name).
func (o *listOptions) rows(ctx context.Context, segments *segmentReader, changed, known []exagentv1.AgentRun) []pendingApproval {
	for i := range changed {
		if err := o.resolvePendingArgs(ctx, segments, &changed[i]); err != nil {
			// One run's unreadable segment does not hide the others' approvals.
			_, _ = fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
		}
	}
	rows := pendingApprovals(changed)
	if len(rows) == 0 {
		return nil
	}
	ancestors := missingAncestors(ctx, o.client, changed, known)
	return withPaths(rows, append(append([]exagentv1.AgentRun(nil), known...), ancestors...))
}

// resolvePendingArgs puts back inline the sealed arguments of the calls
// run's pending approvals are about (only the segments the hot status's
// refs name are read, no chain).
func (o *listOptions) resolvePendingArgs(ctx context.Context, segments *segmentReader, run *exagentv1.AgentRun) error {
	need := false
	for _, a := range run.Status.Pending() {
		if c := run.Status.Call(a.CallID); c != nil && c.ArgsRef != nil && c.Args == "" {
			need = true
		}
	}
	if !need {
		return nil
	}
	// withValues resolves every hot ref: read the few segments they name.
	segs, err := segments.named(ctx, run, refNames(run, nil))
	if err == nil {
		var resolved *exagentv1.AgentRun
		if resolved, err = withValues(run, segs); err == nil {
			*run = *resolved
			return nil
		}
	}
	return fmt.Errorf("the arguments of run %s/%s's pending calls are sealed and could not be read: %v", run.Namespace, run.Name, err)
}

func (o *listOptions) print(rows []pendingApproval) error {
	doc := pendingList{Items: nonNil(rows), HeldByBudget: o.held, Waiting: o.waits}
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(doc, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	if len(rows) == 0 {
		// Like kubectl get: the empty result is news, not data, so it goes to stderr.
		var err error
		if o.namespace == "" {
			_, err = fmt.Fprintln(o.ErrOut, "No pending approvals found.")
		} else {
			_, err = fmt.Fprintf(o.ErrOut, "No pending approvals in %s namespace.\n", o.namespace)
		}
		if err != nil {
			return err
		}
		if err := printHeld(o.Out, o.held, o.namespace == "", false); err != nil {
			return err
		}
		return o.printWaiting(len(o.held) > 0)
	}
	if err := printApprovalTable(o.Out, rows, o.clock.Now(), o.Output == "wide"); err != nil {
		return err
	}
	if err := printHeld(o.Out, o.held, o.namespace == "", true); err != nil {
		return err
	}
	return o.printWaiting(true)
}

// printWaiting prints the waiting calls --waiting read, if any.
func (o *listOptions) printWaiting(gap bool) error {
	if len(o.waits) == 0 {
		return nil
	}
	return printWaiting(o.Out, o.waits, o.clock.Now(), o.namespace == "", gap)
}

func nonNil(rows []pendingApproval) []pendingApproval {
	if rows == nil {
		return []pendingApproval{}
	}
	return rows
}
