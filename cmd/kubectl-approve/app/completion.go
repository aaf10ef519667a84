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
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// completionTimeout keeps a slow or unreachable apiserver from hanging the shell.
const completionTimeout = 5 * time.Second

// runFilter selects the runs a verb can act on, so completion offers only
// those: selector is what the apiserver is asked for (nil: every run), keep
// is checked on each run it returns.
type runFilter struct {
	selector func() fields.Selector
	keep     func(*exagentv1.AgentRun) bool
}

var (
	anyRun = runFilter{keep: func(*exagentv1.AgentRun) bool { return true }}
	// pendingRuns: only a run AwaitingApproval has pending approvals (runs.go).
	pendingRuns = runFilter{selector: awaitingApproval,
		keep: func(r *exagentv1.AgentRun) bool { return len(r.Status.Pending()) > 0 }}
	liveRuns = runFilter{selector: notEnded,
		keep: func(r *exagentv1.AgentRun) bool { return !r.Status.Phase.IsTerminal() }}
	// uncertainRuns: an Uncertain call outlives its phase (a run cancelled,
	// failed or expired around a call in flight keeps it for a Resolve), but
	// a Succeeded run never holds one — and most runs are Succeeded.
	uncertainRuns = runFilter{selector: func() fields.Selector {
		return fields.OneTermNotEqualSelector(exagentv1.FieldStatusPhase, string(exagentv1.PhaseSucceeded))
	}, keep: func(r *exagentv1.AgentRun) bool { return len(r.Status.UncertainCalls()) > 0 }}
)

// listRuns lists the namespace's runs that filter selects, for completion;
// any error means "no suggestions".
func listRuns(f *factory, filter runFilter) []exagentv1.AgentRun {
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
	var sel fields.Selector
	if filter.selector != nil {
		sel = filter.selector()
	}
	var out []exagentv1.AgentRun
	_, err = (&runLister{c: c}).list(ctx, ns, sel, func(page []exagentv1.AgentRun) error {
		for i := range page {
			if filter.keep(&page[i]) {
				out = append(out, page[i])
			}
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return out
}

// completionRun reads the run called name, for completing what follows
// it (one get, not a list); nil when it cannot be read.
func completionRun(f *factory, name string) *exagentv1.AgentRun {
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
	run, err := getRun(ctx, c, ns, name)
	if err != nil {
		return nil
	}
	return run
}

// completeRuns suggests run names for the first argument.
func completeRuns(f *factory, filter runFilter) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		runs := listRuns(f, filter)
		var out []cobra.Completion
		for i := range runs {
			if strings.HasPrefix(runs[i].Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(runs[i].Name, string(runs[i].Status.Phase)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRunThenApproval suggests runs, then the chosen run's pending approval ids.
func completeRunThenApproval(f *factory, filter runFilter) cobra.CompletionFunc {
	runs := completeRuns(f, filter)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return runs(cmd, args, toComplete)
		case 1:
			run := completionRun(f, args[0])
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
		run := completionRun(f, args[0])
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
