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

func newDenyCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newDecideCommand(f, streams, exagentv1.DecisionDeny, &cobra.Command{
		Use:   "deny RUN [APPROVAL]",
		Short: "Deny a pending tool call",
		Long: `Deny a pending tool call of a run. With the Agent's policy onDeny Stop the
run ends Denied; with Continue the model is told who denied it and why.`,
		Example:           `  kubectl approve deny triage-42 --reason "not during the freeze"`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeRunThenApproval(f, pendingRuns),
	})
}
