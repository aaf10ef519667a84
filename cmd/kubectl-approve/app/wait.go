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
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const defaultWaitTimeout = 5 * time.Minute

// waitOptions waits until a run pauses for a human or ends.
type waitOptions struct {
	genericiooptions.IOStreams
	For     string
	Timeout time.Duration

	namespace string
	run       string
	cond      runCondition
	client    client.WithWatch
}

func newWaitCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &waitOptions{IOStreams: streams, Timeout: defaultWaitTimeout}
	cmd := &cobra.Command{
		Use:   "wait RUN --for=paused|done",
		Short: "Wait until a run pauses for a decision or ends",
		Long: `Wait until the run is paused (waiting for an approval, or Uncertain and
waiting for a resolve) or done (Succeeded, Failed, Denied, Cancelled or
Expired), then print its phase. A zero --timeout checks once; a negative one
waits a week.`,
		Example: `  kubectl approve wait triage-42 --for=paused && kubectl approve show triage-42
  kubectl approve wait triage-42 --for=done --timeout=10m`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRuns(f, anyRun),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().StringVar(&o.For, "for", "", "The state to wait for: paused or done.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait.")
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions(conditionNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func conditionNames() []string {
	names := make([]string, 0, len(runConditions))
	for n := range runConditions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Complete resolves the namespace, the client and the condition.
func (o *waitOptions) Complete(f *factory, _ *cobra.Command, args []string) error {
	var err error
	if o.namespace, err = f.Namespace(); err != nil {
		return err
	}
	o.run = args[0]
	o.cond = runConditions[o.For]
	if o.Timeout < 0 {
		o.Timeout = 7 * 24 * time.Hour
	}
	o.client, err = f.WatchClient()
	return err
}

// Validate checks --for.
func (o *waitOptions) Validate() error {
	if _, ok := runConditions[o.For]; !ok {
		if o.For == "" {
			return fmt.Errorf("--for is required: %s", strings.Join(conditionNames(), " or "))
		}
		return fmt.Errorf("invalid --for %q: must be %s", o.For, strings.Join(conditionNames(), " or "))
	}
	return nil
}

// Run waits and prints the phase reached.
func (o *waitOptions) Run(ctx context.Context) error {
	run, err := waitForRun(ctx, o.client, o.namespace, o.run, o.cond, o.Timeout)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(o.Out, runStateLine(run, o.cond.name))
	return err
}

// runStateLine is kubectl wait's "<resource>/<name> condition met", with the phase.
func runStateLine(run *exagentv1.AgentRun, cond string) string {
	line := fmt.Sprintf("agentrun.exagent.io/%s %s: %s", run.Name, cond, run.Status.Phase)
	if p := pendingLine(run); p != "" {
		line += " (" + p + ")"
	}
	if run.Status.Phase != exagentv1.PhaseSucceeded && run.Status.Reason != "" && cond == "done" {
		line += " (" + run.Status.Reason + ")"
	}
	return line
}

// pendingLine counts what the run waits for: "1 pending approval",
// "2 pending questions", "1 pending approval and 1 pending question".
func pendingLine(run *exagentv1.AgentRun) string {
	approvals, questions := 0, 0
	for _, a := range run.Status.Pending() {
		if a.IsQuestion() {
			questions++
		} else {
			approvals++
		}
	}
	if approvals+questions == 0 && run.Status.PendingApprovals > 0 {
		approvals = int(run.Status.PendingApprovals) // a status without its entries: say what it counts
	}
	var parts []string
	if approvals > 0 {
		parts = append(parts, fmt.Sprintf("%d pending %s", approvals, pluralWord(approvals, "approval", "approvals")))
	}
	if questions > 0 {
		parts = append(parts, fmt.Sprintf("%d pending %s", questions, pluralWord(questions, "question", "questions")))
	}
	return strings.Join(parts, " and ")
}
