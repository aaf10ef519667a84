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

func newApproveCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newDecideCommand(f, streams, exagentv1.DecisionApprove, &cobra.Command{
		Use:   "approve RUN [APPROVAL]",
		Short: "Approve, deny, cancel or resolve the tool calls exagent runs are waiting for",
		Long: `Approve a pending tool call of an exagent AgentRun, as the authenticated kubectl user.

The decision carries the payload hash and revision the plugin read: if the
request changed in between, the operator rejects the decision instead of
approving something nobody read. With several pending approvals, name one
or pass --all. By default the command waits until the operator has applied
or rejected the decision and prints the result.`,
		Example: `  # List the approvals waiting in the current namespace, or in all of them
  kubectl approve list
  kubectl approve list -A

  # Look at the exact tool call before deciding, then decide only that one
  kubectl approve show triage-42
  kubectl approve triage-42 call-0-1 --expect-hash sha256:…

  # Approve the run's only pending approval, or a named one
  kubectl approve triage-42 --reason "ok"
  kubectl approve triage-42 call-0-1

  # Deny, cancel, or resolve a call whose outcome is unknown
  kubectl approve deny triage-42 --reason "not during the freeze"
  kubectl approve cancel triage-42
  kubectl approve resolve triage-42 --call call-1-0 --outcome Succeeded --evidence "ticket OPS-12"`,
		Args:              cobra.MaximumNArgs(2),
		ValidArgsFunction: completeRunThenApproval(f, pendingRuns),
	})
}
