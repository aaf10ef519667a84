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
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func newResolveCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := newDecideCommand(f, streams, exagentv1.DecisionResolve, &cobra.Command{
		Use:   "resolve RUN --call ID --outcome Succeeded|Failed|Retry [--evidence TEXT]",
		Short: "Say what really happened to a tool call whose outcome is Uncertain",
		Long: `A tool call whose effect may or may not have happened (the operator crashed or
lost its lease mid-call) is Uncertain and is never retried on its own. After
checking the target system, resolve it: Succeeded or Failed records that
outcome for the model; Retry re-sends the call with the same idempotency key.
Needs the "resolve" verb on agents/approval (ClusterRole exagent-resolver).`,
		Example:           `  kubectl approve resolve triage-42 --call call-1-0 --outcome Succeeded --evidence "charge ch_123 exists"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRuns(f, uncertainRuns),
	})
	_ = cmd.RegisterFlagCompletionFunc("call", completeUncertainCalls(f))
	_ = cmd.RegisterFlagCompletionFunc("outcome", cobra.FixedCompletions(
		[]string{string(exagentv1.ResolveSucceeded), string(exagentv1.ResolveFailed), string(exagentv1.ResolveRetry)},
		cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
