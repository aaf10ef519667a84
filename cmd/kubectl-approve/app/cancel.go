package app

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

func newCancelCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := newDecideOptions(streams, exagentv1.DecisionCancel)
	cmd := &cobra.Command{
		Use:               "cancel RUN [APPROVAL]",
		Short:             "Cancel a run that is waiting for a decision",
		Long:              `Cancel a run: it ends Cancelled and none of its pending tool calls runs.`,
		Example:           `  kubectl approve cancel triage-42 --reason "superseded by triage-43"`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeRunThenApproval(f, liveRuns),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	o.AddFlags(cmd)
	return cmd
}
