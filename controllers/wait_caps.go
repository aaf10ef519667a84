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

package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/index"
)

// DefaultMaxWaitingRunsPerNamespace is --max-waiting-runs-per-namespace
// when unset: a waiting run costs the manager a summary in its cache and a
// queue entry, not a worker, so the cap is about one tenant's share.
const DefaultMaxWaitingRunsPerNamespace = 1000

// waitsRefused says why sc's run may not begin a wait now ("" when it
// may): its namespace already has as many Waiting runs as the manager
// allows. Counted from the cache's index of Waiting runs, and only for a
// run that may step now with an Agent that has a waiting tool — the
// others never begin a wait in this turn.
func (r *AgentRunReconciler) waitsRefused(ctx context.Context, sc *scope) string {
	limit := r.MaxWaitingRunsPerNamespace
	if limit <= 0 || sc.agent == nil || !hasWaitingTool(&sc.agent.Spec) {
		return ""
	}
	switch sc.status.Phase {
	case exagentv1.PhaseQueued, exagentv1.PhaseApproved, exagentv1.PhaseRunning:
	default:
		return ""
	}
	var runs exagentv1.AgentRunList
	if err := r.Client.List(ctx, &runs, client.InNamespace(sc.key.Namespace),
		client.MatchingFields{index.Waiting: index.WaitingValue}, client.UnsafeDisableDeepCopy); err != nil {
		// The cap cannot be counted: refuse rather than let one tenant
		// past it; the model is told and may try again.
		logf.FromContext(ctx).Error(err, "counting the namespace's waiting runs")
		return "the manager could not count the namespace's waiting runs; try again later"
	}
	if len(runs.Items) < limit {
		return ""
	}
	return fmt.Sprintf("namespace %s already has %d waiting runs, the most this manager allows "+
		"(--max-waiting-runs-per-namespace=%d); let some end or cancel them (kubectl approve list --waiting)",
		sc.key.Namespace, len(runs.Items), limit)
}

// hasWaitingTool reports whether an Agent has a builtin whose calls wait.
func hasWaitingTool(spec *exagentv1.AgentSpec) bool {
	for i := range spec.Tools {
		if b := spec.Tools[i].Builtin; b != nil {
			switch b.Operation {
			case exagentv1.BuiltinSleep, exagentv1.BuiltinWaitFor, exagentv1.BuiltinWaitForCallback:
				return true
			}
		}
	}
	return false
}
