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

func newCancelCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newDecideCommand(f, streams, exagentv1.DecisionCancel, &cobra.Command{
		Use:   "cancel RUN [APPROVAL]",
		Short: "Cancel a run that has not ended, whatever it is doing",
		Long: `Cancel a run in any phase that has not ended — not started yet, queued,
running, waiting for approval, approved or uncertain. It ends Cancelled at once:
no pending tool call runs and no new model request or tool call starts. A tool
call already in flight may still have its effect; it is recorded Uncertain in
the cancelled run (kubectl approve show lists it) and can be resolved, for the
record, with kubectl approve resolve --outcome Succeeded|Failed.
Needs the "approve" verb on agents/approval (ClusterRole exagent-approver).`,
		Example: `  kubectl approve cancel triage-42 --reason "superseded by triage-43"
  kubectl approve cancel triage-42 call-0-1-r1   # only while that approval is pending`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeRunThenApproval(f, liveRuns),
	})
}
