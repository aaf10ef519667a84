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
	"slices"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

const defaultTranscriptTail = 10

// showOptions prints everything a decider should read before deciding.
type showOptions struct {
	genericiooptions.IOStreams
	Transcript int

	namespace  string
	run        string
	approvalID string
	client     client.Client
	clock      clock.PassiveClock
}

func newShowCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &showOptions{IOStreams: streams, Transcript: defaultTranscriptTail, clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:     "show RUN [APPROVAL]",
		Aliases: []string{"describe"},
		Short:   "Show the exact tool call a run waits on, who may decide it, and the recent transcript",
		Long: `Show what a decision would be about: the tool call with its arguments, the
payload hash and revision a decision binds, the policy rule that asked, who
may decide (RBAC verb, the Agent's approvers, and whether you may), when the
request expires, and the run's recent transcript.`,
		Example: `  kubectl approve show triage-42
  kubectl approve show triage-42 call-0-1 --transcript=-1`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeRunThenApproval(f, anyRun),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().IntVar(&o.Transcript, "transcript", o.Transcript, "How many of the last transcript messages to show; -1 for all, 0 for none.")
	return cmd
}

// Complete resolves the namespace, the client and the arguments.
func (o *showOptions) Complete(f *factory, _ *cobra.Command, args []string) error {
	var err error
	if o.namespace, err = f.Namespace(); err != nil {
		return err
	}
	o.run = args[0]
	if len(args) > 1 {
		o.approvalID = args[1]
	}
	o.client, err = f.Client()
	return err
}

// Validate checks the flags.
func (o *showOptions) Validate() error {
	if o.Transcript < -1 {
		return errors.New("--transcript must be -1 (all), 0 (none) or a positive count")
	}
	return nil
}

// Run reads the run (and, when readable, its Agent) and prints the view.
func (o *showOptions) Run(ctx context.Context) error {
	run, err := getRun(ctx, o.client, o.namespace, o.run)
	if err != nil {
		return err
	}
	if o.approvalID != "" && run.Status.Approval(o.approvalID) == nil {
		return fmt.Errorf("run %q has no approval %q", o.run, o.approvalID)
	}
	segs, whole, err := readForShow(ctx, newSegmentReader(o.client), run, o.Transcript)
	if err != nil {
		return err
	}
	v, err := resolveShow(run, segs, whole, o.Transcript)
	if err != nil {
		return err
	}
	v.ApprovalID, v.Now = o.approvalID, o.clock.Now()
	if !served(run) {
		v.NotServed = notServedSentence(run)
	}
	if len(run.Status.Children) > 0 || run.Spec.Delegation != nil {
		if v.Below, v.ByName, err = treeOf(ctx, o.client, run); err != nil {
			return err
		}
	}
	agent := &exagentv1.Agent{}
	switch err := o.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}, agent); {
	case err == nil:
		v.Agent = agent
	case apierrors.IsNotFound(err):
		v.AgentNote = "not found"
	default:
		// A decider may lack "get" on agents; the view still stands without it.
		v.AgentNote = "not readable: " + FormatError(err)
	}
	// What the run waits for decides which verb matters: resolve for a run
	// that only has Uncertain calls, answer for one that only has questions,
	// approve otherwise.
	kind := exagentv1.DecisionApprove
	pending := run.Status.Pending()
	if len(pending) == 0 && len(run.Status.UncertainCalls()) > 0 {
		kind = exagentv1.DecisionResolve
	}
	if len(pending) > 0 && !slices.ContainsFunc(pending, func(a exagentv1.Approval) bool { return !a.IsQuestion() }) {
		kind = exagentv1.DecisionAnswer
	}
	v.YouVerb = (&exagentv1.ApprovalDecisionSpec{Decision: kind}).Verb()
	v.YouMay = o.canDecide(ctx, run, kind)
	return renderShow(o.Out, v)
}

// canDecide asks the apiserver whether the current user holds the verb the
// decision needs on agents/approval; nil when the question itself failed.
func (o *showOptions) canDecide(ctx context.Context, run *exagentv1.AgentRun, kind exagentv1.DecisionKind) *bool {
	return mayI(ctx, o.client, deciderAttributes(run, kind))
}

// readForShow reads what show needs of run's sealed transcript: the whole
// chain when the transcript tail asked for goes past status.history (whole
// is then true), else only the segments the hot status's refs name.
func readForShow(ctx context.Context, r *segmentReader, run *exagentv1.AgentRun, tail int) ([]segment.Segment, bool, error) {
	if !sealed(run) {
		return nil, false, nil
	}
	history := run.Status.History
	if need := shownCount(run, tail); need > len(history) {
		chain, err := r.chain(ctx, run)
		return chain, true, err
	}
	names := refNames(run, history[len(history)-shownCount(run, tail):])
	segs, err := r.named(ctx, run, names)
	return segs, false, err
}

// shownCount is how many of the last messages of the logical transcript
// show prints for --transcript tail.
func shownCount(run *exagentv1.AgentRun, tail int) int {
	total := transcriptTotal(run)
	if tail < 0 || tail > total {
		return total
	}
	return tail
}

// transcriptTotal is the length of run's logical transcript: the sealed
// messages the head counts, then status.history.
func transcriptTotal(run *exagentv1.AgentRun) int {
	n := len(run.Status.History)
	if h := run.Status.Transcript; h != nil {
		n += int(h.Messages)
	}
	return n
}

// resolveShow builds show's view of run from the segments read for it
// (whole: the verified chain; else the segments the hot refs name), every
// value shown inline: the arguments of the calls decided on, the output
// and the transcript's messages.
func resolveShow(run *exagentv1.AgentRun, segs []segment.Segment, whole bool, tail int) (showView, error) {
	resolved, err := withValues(run, segs)
	if err != nil {
		return showView{}, err
	}
	v := showView{Run: resolved, Tail: tail, TranscriptTotal: transcriptTotal(run)}
	history := run.Status.History
	if whole {
		if v.Transcript, err = segment.Transcript(segs, history); err != nil {
			return showView{}, chainError(run, err)
		}
		return v, nil
	}
	shown := history[len(history)-min(shownCount(run, tail), len(history)):]
	if v.Transcript, err = segment.ValuesOf(segs).ResolveMessages(shown); err != nil {
		return showView{}, chainError(run, err)
	}
	return v, nil
}
