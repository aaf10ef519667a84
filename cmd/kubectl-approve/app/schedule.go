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

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// newScheduleCommand groups the verbs on AgentSchedules.
func newScheduleCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Act on AgentSchedules",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newScheduleRunCommand(f, streams))
	return cmd
}

// scheduleRunOptions creates one run of a schedule now: a manual tick.
type scheduleRunOptions struct {
	genericiooptions.IOStreams

	namespace string
	name      string
	client    client.Client
}

func newScheduleRunCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &scheduleRunOptions{IOStreams: streams}
	return &cobra.Command{
		Use:   "run SCHEDULE",
		Short: "Create one run of a schedule now (a manual tick), as you",
		Long: `Create one AgentRun from an AgentSchedule's spec.runTemplate now, named
SCHEDULE-manual-<random> and labelled with the schedule (it counts as one of
the schedule's runs: concurrencyPolicy and the history limits see it).

It is created with your own credentials, so admission stamps you as its
requester — not the person who set the schedule — and checks that you may
create runs (and use the template's serviceAccountName). Under the Agent's
forbidSelfApproval you then may not approve what it asks.`,
		Example: `  kubectl approve schedule run nightly-review -n demo`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
}

// Complete resolves the namespace and the client.
func (o *scheduleRunOptions) Complete(f *factory, _ *cobra.Command, args []string) error {
	var err error
	if o.namespace, err = f.Namespace(); err != nil {
		return err
	}
	o.name = args[0]
	o.client, err = f.Client()
	return err
}

// Validate has nothing to check beyond the argument count.
func (o *scheduleRunOptions) Validate() error { return nil }

// Run reads the schedule and creates its run.
func (o *scheduleRunOptions) Run(ctx context.Context) error {
	sched := &exagentv1.AgentSchedule{}
	if err := o.client.Get(ctx, types.NamespacedName{Namespace: o.namespace, Name: o.name}, sched); err != nil {
		return fmt.Errorf("reading AgentSchedule %s/%s: %w", o.namespace, o.name, err)
	}
	run := manualRun(sched, utilrand.String(5))
	if err := o.client.Create(ctx, run); err != nil {
		return fmt.Errorf("creating a run of schedule %s/%s: %w", o.namespace, o.name, err)
	}
	fmt.Fprintf(o.Out, "agentrun/%s created from schedule %s (agent %s, requested by you)\n", run.Name, sched.Name, run.Spec.AgentRef.Name)
	return nil
}

// manualRun is a run of sched's template named NAME-manual-SUFFIX, owned
// by the schedule (deleted with it; not its controller, which only the
// manager's ticks are) and labelled with it. requestedBy is left to
// admission, which stamps the creator.
func manualRun(sched *exagentv1.AgentSchedule, suffix string) *exagentv1.AgentRun {
	return &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: sched.Namespace,
			Name:      fmt.Sprintf("%s-manual-%s", sched.Name, suffix),
			Labels:    map[string]string{exagentv1.LabelSchedule: exagentv1.LabelValue(sched.Name)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentSchedule", Name: sched.Name, UID: sched.UID,
			}},
		},
		Spec: sched.Spec.RunTemplate.RunSpec(nil),
	}
}
