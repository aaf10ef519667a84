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
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const defaultDecisionTimeout = time.Minute

// decideOptions is shared by the four deciding verbs (approve, deny, cancel,
// resolve): each creates ApprovalDecisions and, unless told not to, waits
// until the operator applied or rejected them.
type decideOptions struct {
	genericiooptions.IOStreams
	PrintFlags *genericclioptions.PrintFlags

	Request    decisionRequest
	Namespace  string
	RunName    string
	Wait       bool
	Timeout    time.Duration
	DryRunArg  string
	OutcomeArg string
	ArgsFile   string
	answer     answerFlags // answer.go

	dryRun  dryRun
	printer printers.ResourcePrinter // nil: the human summary
	client  client.Client
	clock   clock.Clock
}

func newDecideOptions(streams genericiooptions.IOStreams, kind exagentv1.DecisionKind) *decideOptions {
	return &decideOptions{
		IOStreams:  streams,
		PrintFlags: genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme),
		Request:    decisionRequest{Kind: kind},
		Wait:       true,
		Timeout:    defaultDecisionTimeout,
		clock:      clock.RealClock{},
	}
}

// newDecideCommand gives cmd, which says a deciding verb's usage, help,
// arguments and completion, what every deciding verb shares: its options,
// its flags (AddFlags) and its run (Complete, Validate, Run), so that a
// verb is only its text. Without arguments it prints the help: bare
// `kubectl approve` is the root command; the other verbs' Args require one.
func newDecideCommand(f *factory, streams genericiooptions.IOStreams, kind exagentv1.DecisionKind, cmd *cobra.Command) *cobra.Command {
	o := newDecideOptions(streams, kind)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return runOptions(cmd.Context(), o, f, cmd, args)
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags registers the flags of the verb o.Request.Kind.
func (o *decideOptions) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&o.Request.Reason, "reason", "", "Why you decided; recorded in the run and, on a deny with onDeny Continue, shown to the model.")
	switch o.Request.Kind {
	case exagentv1.DecisionApprove, exagentv1.DecisionDeny:
		fs.BoolVar(&o.Request.All, "all", false, "Decide every pending approval of the run (one ApprovalDecision each).")
	}
	if o.Request.Kind == exagentv1.DecisionApprove {
		fs.StringArrayVar(&o.Request.Sets, "set", nil, "Edit the call before approving it: key=value (key may be a.b.c; value is JSON when it parses, "+
			"else a string). Repeatable. The call runs with exactly the edited arguments.")
		fs.StringVar(&o.ArgsFile, "args-file", "", "Edit the call before approving it: the whole edited arguments, a JSON or YAML object (- for stdin).")
		fs.BoolVar(&o.Request.ForRun, "for-run", false, "Also approve later calls of the same tool in this run that the same rule asks about, "+
			"while the tool and the policy are unchanged (decision scope Run).")
	}
	switch o.Request.Kind {
	case exagentv1.DecisionApprove, exagentv1.DecisionDeny, exagentv1.DecisionAnswer:
		fs.StringVar(&o.Request.ExpectHash, "expect-hash", "", "The payload hash you read (kubectl approve show prints it): "+
			"refuse, sending nothing, if the call's hash is another one now.")
	}
	switch o.Request.Kind {
	case exagentv1.DecisionAnswer:
		o.answer.addFlags(cmd)
	case exagentv1.DecisionResolve:
		fs.StringVar(&o.Request.CallID, "call", "", "ID of the Uncertain tool call to resolve (optional when the run has only one).")
		fs.StringVar(&o.OutcomeArg, "outcome", "", "What really happened: Succeeded, Failed, or Retry (re-send with the same idempotency key).")
		fs.StringVar(&o.Request.Evidence, "evidence", "", "What you checked to know the outcome (a ticket, a log line, …).")
	}
	fs.BoolVar(&o.Wait, "wait", o.Wait, "Wait until the operator applied or rejected the decision and print the result.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits.")
	addDryRunFlag(cmd, &o.DryRunArg)
	o.PrintFlags.AddFlags(cmd)
}

// Complete fills the options from the flags and arguments.
func (o *decideOptions) Complete(f *factory, cmd *cobra.Command, args []string) error {
	var err error
	if o.Namespace, err = f.Namespace(); err != nil {
		return err
	}
	if o.dryRun, err = parseDryRun(o.DryRunArg); err != nil {
		return err
	}
	if len(args) > 0 {
		o.RunName = args[0]
	}
	if len(args) > 1 {
		o.Request.ApprovalID = args[1]
	}
	if o.OutcomeArg != "" {
		o.Request.Outcome = exagentv1.ResolveOutcome(o.OutcomeArg)
	}
	if o.ArgsFile != "" {
		if o.Request.ArgsFile, err = readArgsFile(o.ArgsFile, o.In); err != nil {
			return err
		}
	}
	if o.Request.Kind == exagentv1.DecisionAnswer {
		// --text "" is an answer: given, not merely empty.
		o.answer.textSet = cmd.Flags().Changed("text")
		if err := o.answer.build(&o.Request, o.In); err != nil {
			return err
		}
	}
	if o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat != "" {
		if o.dryRun != dryRunNone {
			if err := o.PrintFlags.Complete("%s (" + string(o.dryRun) + " dry run)"); err != nil {
				return fmt.Errorf("the output format with --dry-run: %w", err)
			}
		}
		if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
			return err
		}
	}
	o.client, err = f.Client()
	return err
}

// Validate rejects flag combinations that cannot mean anything.
func (o *decideOptions) Validate() error {
	if o.RunName == "" {
		return errors.New("a run name is required")
	}
	if o.Request.All && o.Request.ApprovalID != "" {
		return errors.New("--all and an APPROVAL argument cannot be used together")
	}
	if o.Request.All && o.Request.ExpectHash != "" {
		return errors.New("--expect-hash is the hash of one call: name the approval instead of --all")
	}
	if o.Request.Kind == exagentv1.DecisionResolve {
		switch o.Request.Outcome {
		case exagentv1.ResolveSucceeded, exagentv1.ResolveFailed, exagentv1.ResolveRetry:
		case "":
			return errors.New("--outcome is required: Succeeded, Failed or Retry")
		default:
			return fmt.Errorf("invalid --outcome %q: must be Succeeded, Failed or Retry", o.Request.Outcome)
		}
	}
	if o.Timeout <= 0 && o.Wait && o.dryRun == dryRunNone {
		return errors.New("--timeout must be positive")
	}
	return nil
}

// Run reads the run, creates the decisions and reports what became of them.
func (o *decideOptions) Run(ctx context.Context) error {
	decisions, err := prepareDecisions(ctx, o.client, o.Namespace, o.RunName, o.Request, o.clock.Now(), o.dryRun != dryRunClient)
	if err != nil {
		return err
	}
	var failures multiError
	var created []*exagentv1.ApprovalDecision
	for _, d := range decisions {
		if err := o.create(ctx, d); err != nil {
			if len(decisions) == 1 {
				return err
			}
			failures = append(failures, fmt.Errorf("approval %q: %w", d.Spec.ApprovalID, err))
			continue
		}
		created = append(created, d)
	}
	for _, d := range created {
		if o.dryRun != dryRunNone || !o.Wait {
			if err := o.print(d, o.createdLine(d)); err != nil {
				return err
			}
			continue
		}
		decided, err := waitForDecision(ctx, o.client, d, o.Timeout)
		if err != nil {
			if len(decisions) == 1 {
				return err
			}
			failures = append(failures, err)
			continue
		}
		if decided.Status.Phase == exagentv1.DecisionRejected {
			rejected := rejectedError(decided)
			if len(decisions) == 1 {
				if o.printer != nil {
					_ = o.printer.PrintObj(decided, o.Out)
				}
				return rejected
			}
			failures = append(failures, rejected)
			continue
		}
		if err := o.print(decided, o.appliedLine(ctx, decided)); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return failures
	}
	return nil
}

// create sends d (createDecision).
func (o *decideOptions) create(ctx context.Context, d *exagentv1.ApprovalDecision) error {
	return createDecision(ctx, o.client, d, o.dryRun)
}

func (o *decideOptions) print(d *exagentv1.ApprovalDecision, line string) error {
	if o.printer != nil {
		return o.printer.PrintObj(d, o.Out)
	}
	_, err := fmt.Fprintln(o.Out, line)
	return err
}

func (o *decideOptions) createdLine(d *exagentv1.ApprovalDecision) string {
	line := "approvaldecision.exagent.io/" + d.Name + " created"
	switch o.dryRun {
	case dryRunClient:
		line += " (dry run)"
	case dryRunServer:
		line += " (server dry run)"
	}
	return line
}

// appliedLine is appliedLine, saying for an Approve under a quorum that
// the vote was counted and what the approval still needs: the run, read
// again, still waits for it.
func (o *decideOptions) appliedLine(ctx context.Context, d *exagentv1.ApprovalDecision) string {
	line := appliedLine(d)
	if d.Spec.Decision != exagentv1.DecisionApprove {
		return line
	}
	run, err := getRun(ctx, o.client, d.Namespace, d.Spec.RunRef.Name)
	if err != nil {
		return line
	}
	a := run.Status.Approval(d.Spec.ApprovalID)
	if a == nil || a.Quorum == nil || a.State != exagentv1.ApprovalPending {
		return line
	}
	who := "your"
	if d.Spec.Actor != nil {
		who = d.Spec.Actor.Username + "'s"
	}
	return fmt.Sprintf("run %s/%s: %s vote on approval %s counted (%d of the quorum's %s); %s (approvaldecision.exagent.io/%s)",
		d.Namespace, d.Spec.RunRef.Name, who, a.ID, len(a.Votes), quorumLine(a.Quorum), a.QuorumMissing(), d.Name)
}

// appliedLine is the human summary of an applied decision.
func appliedLine(d *exagentv1.ApprovalDecision) string {
	var what string
	switch d.Spec.Decision {
	case exagentv1.DecisionApprove:
		what = fmt.Sprintf("approval %s approved", d.Spec.ApprovalID)
		if d.Spec.Arguments != nil {
			what += " with edited arguments"
		}
		if d.Spec.Scope == exagentv1.ScopeRun {
			what += " for the rest of the run"
		}
	case exagentv1.DecisionDeny:
		what = fmt.Sprintf("approval %s denied", d.Spec.ApprovalID)
	case exagentv1.DecisionCancel:
		what = "cancelled"
	case exagentv1.DecisionResolve:
		what = fmt.Sprintf("call %s resolved as %s", d.Spec.CallID, d.Spec.Outcome)
	case exagentv1.DecisionAnswer:
		switch d.Spec.Action {
		case exagentv1.AnswerDecline:
			what = fmt.Sprintf("question %s declined", d.Spec.ApprovalID)
		case exagentv1.AnswerCancel:
			what = fmt.Sprintf("question %s dismissed", d.Spec.ApprovalID)
		default:
			what = fmt.Sprintf("question %s answered", d.Spec.ApprovalID)
		}
	}
	actor := ""
	if d.Spec.Actor != nil && d.Spec.Actor.Username != "" {
		actor = " by " + d.Spec.Actor.Username
	}
	return fmt.Sprintf("run %s/%s: %s%s (approvaldecision.exagent.io/%s)", d.Namespace, d.Spec.RunRef.Name, what, actor, d.Name)
}

// rejectedError is the operator's reason for refusing the decision.
func rejectedError(d *exagentv1.ApprovalDecision) error {
	msg := strings.TrimSpace(d.Status.Message)
	if msg == "" {
		msg = "the operator rejected the decision"
	}
	return fmt.Errorf("%s (approvaldecision.exagent.io/%s rejected)", msg, d.Name)
}

// getRun reads one AgentRun, turning NotFound into a sentence.
func getRun(ctx context.Context, c client.Client, ns, name string) (*exagentv1.AgentRun, error) {
	run := &exagentv1.AgentRun{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, run); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("run %q not found in namespace %q", name, ns)
		}
		if meta.IsNoMatchError(err) {
			return nil, errNotInstalled
		}
		return nil, fmt.Errorf("reading run %q: %w", name, err)
	}
	return run, nil
}
