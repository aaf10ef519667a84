package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// listOptions lists pending approvals of one namespace or all of them.
type listOptions struct {
	genericiooptions.IOStreams
	AllNamespaces bool
	Output        string

	namespace string
	client    client.Client
	clock     clock.PassiveClock
}

func newListCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &listOptions{IOStreams: streams, clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:     "list [-A]",
		Aliases: []string{"ls"},
		Short:   "List the approvals runs are waiting for",
		Long: `List every pending approval of the runs in the namespace (or, with -A, in all
namespaces): the run, the approval id, the tool and its arguments, when it
was requested and when it expires.`,
		Example: `  kubectl approve list
  kubectl approve list -A -o wide
  kubectl approve list -o json | jq -r '.items[] | "\(.run) \(.approval)"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List pending approvals across all namespaces.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: wide, json or yaml.")
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
	o.client, err = f.Client()
	return err
}

// Validate checks the output format.
func (o *listOptions) Validate() error {
	switch o.Output {
	case "", "wide", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,wide,yaml", o.Output)
}

// Run lists the runs and prints their pending approvals.
func (o *listOptions) Run(ctx context.Context) error {
	var runs exagentv1.AgentRunList
	var opts []client.ListOption
	if o.namespace != "" {
		opts = append(opts, client.InNamespace(o.namespace))
	}
	if err := o.client.List(ctx, &runs, opts...); err != nil {
		return fmt.Errorf("listing runs: %w", err)
	}
	segments := newSegmentReader(o.client)
	for i := range runs.Items {
		if err := o.resolvePendingArgs(ctx, segments, &runs.Items[i]); err != nil {
			// One run's unreadable segment does not hide the others' approvals.
			_, _ = fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
		}
	}
	rows := withPaths(pendingApprovals(runs.Items), runs.Items)
	return o.print(rows)
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
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(pendingList{Items: nonNil(rows)}, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(pendingList{Items: nonNil(rows)})
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	if len(rows) == 0 {
		// Like kubectl get: the empty result is news, not data, so it goes to stderr.
		if o.namespace == "" {
			_, err := fmt.Fprintln(o.ErrOut, "No pending approvals found.")
			return err
		}
		_, err := fmt.Fprintf(o.ErrOut, "No pending approvals in %s namespace.\n", o.namespace)
		return err
	}
	return printApprovalTable(o.Out, rows, o.clock.Now(), o.Output == "wide")
}

func nonNil(rows []pendingApproval) []pendingApproval {
	if rows == nil {
		return []pendingApproval{}
	}
	return rows
}
