package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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
	v := showView{
		Run:        run,
		ApprovalID: o.approvalID,
		Now:        o.clock.Now(),
		Tail:       o.Transcript,
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
	// that only has Uncertain calls, approve otherwise.
	kind := exagentv1.DecisionApprove
	if len(run.Status.Pending()) == 0 && len(run.Status.UncertainCalls()) > 0 {
		kind = exagentv1.DecisionResolve
	}
	v.YouVerb = (&exagentv1.ApprovalDecisionSpec{Decision: kind}).Verb()
	v.YouMay = o.canDecide(ctx, run, kind)
	return renderShow(o.Out, v)
}

// canDecide asks the apiserver whether the current user holds the verb the
// decision needs on agents/approval; nil when the question itself failed.
func (o *showOptions) canDecide(ctx context.Context, run *exagentv1.AgentRun, kind exagentv1.DecisionKind) *bool {
	spec := exagentv1.ApprovalDecisionSpec{Decision: kind}
	review := &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace:   run.Namespace,
				Verb:        spec.Verb(),
				Group:       exagentv1.GroupVersion.Group,
				Resource:    "agents",
				Subresource: "approval",
				Name:        run.Spec.AgentRef.Name,
			},
		},
	}
	if err := o.client.Create(ctx, review); err != nil {
		return nil
	}
	allowed := review.Status.Allowed
	return &allowed
}
