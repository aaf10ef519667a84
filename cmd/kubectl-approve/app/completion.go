package app

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// completionTimeout keeps a slow or unreachable apiserver from hanging the shell.
const completionTimeout = 5 * time.Second

// runFilter selects the runs a verb can act on, so completion offers only those.
type runFilter func(*exagentv1.AgentRun) bool

func anyRun(*exagentv1.AgentRun) bool          { return true }
func pendingRuns(r *exagentv1.AgentRun) bool   { return len(r.Status.Pending()) > 0 }
func liveRuns(r *exagentv1.AgentRun) bool      { return !r.Status.Phase.IsTerminal() }
func uncertainRuns(r *exagentv1.AgentRun) bool { return len(r.Status.UncertainCalls()) > 0 }

// listRuns lists the namespace's runs for completion; any error means "no suggestions".
func listRuns(f *factory) []exagentv1.AgentRun {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	c, err := f.Client()
	if err != nil {
		return nil
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil
	}
	var runs exagentv1.AgentRunList
	if err := c.List(ctx, &runs, client.InNamespace(ns)); err != nil {
		return nil
	}
	return runs.Items
}

// runNamed returns the run called name among runs, or nil.
func runNamed(runs []exagentv1.AgentRun, name string) *exagentv1.AgentRun {
	for i := range runs {
		if runs[i].Name == name {
			return &runs[i]
		}
	}
	return nil
}

// completeRuns suggests run names for the first argument.
func completeRuns(f *factory, keep runFilter) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		runs := listRuns(f)
		var out []cobra.Completion
		for i := range runs {
			if keep(&runs[i]) && strings.HasPrefix(runs[i].Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(runs[i].Name, string(runs[i].Status.Phase)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRunThenApproval suggests runs, then the chosen run's pending approval ids.
func completeRunThenApproval(f *factory, keep runFilter) cobra.CompletionFunc {
	runs := completeRuns(f, keep)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return runs(cmd, args, toComplete)
		case 1:
			run := runNamed(listRuns(f), args[0])
			if run == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, a := range run.Status.Pending() {
				if strings.HasPrefix(a.ID, toComplete) {
					tool := ""
					if c := run.Status.Call(a.CallID); c != nil {
						tool = c.Tool
					}
					out = append(out, cobra.CompletionWithDesc(a.ID, tool))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeUncertainCalls suggests --call values: the run's Uncertain calls.
func completeUncertainCalls(f *factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		run := runNamed(listRuns(f), args[0])
		if run == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, c := range run.Status.UncertainCalls() {
			if strings.HasPrefix(c.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(c.ID, c.Tool))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerNamespaceCompletion makes -n complete namespace names, as kubectl does.
func registerNamespaceCompletion(cmd *cobra.Command, f *factory) {
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		c, err := f.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var nss corev1.NamespaceList
		if err := c.List(ctx, &nss); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, ns := range nss.Items {
			if strings.HasPrefix(ns.Name, toComplete) {
				out = append(out, ns.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}
