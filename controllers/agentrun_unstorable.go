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
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// endUnstorable ends a run whose commit the store can never make
// (UnstorableError: the apiserver refuses the status itself). Retrying
// that commit — and, its lease lapsing meanwhile, retaking the lease to
// retry it — could only fail again while an executed effect stays
// unjournaled; so the run ends instead, from the status last stored (which
// the apiserver did accept), with what this attempt learned that safety
// needs (loop.FailUnstorable): the outcome of each effect whose result
// came back, without the result; Uncertain for the rest. The model never
// sees a result it was not given, and no call looks as if it did not run.
//
// When even that commit is refused, nothing more is tried: the error is
// terminal (no retry loop), an Event says so, and the run is left to its
// lease (its recovery makes the calls in flight Uncertain).
func (r *AgentRunReconciler) endUnstorable(ctx context.Context, sc *scope, cause *store.UnstorableError) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	run := sc.run // the object read: the refused commit changed nothing
	if run.Status.Phase.IsTerminal() {
		return ctrl.Result{}, nil
	}
	var fence *loop.Fence
	if c := run.Status.Claim; c != nil && sc.fence != nil && run.Status.Phase == exagentv1.PhaseRunning &&
		c.Holder == sc.fence.Holder && c.Attempt == sc.fence.Attempt {
		fence = sc.fence
	}
	var results []loop.ToolResult
	for _, res := range sc.results {
		if fence != nil && res.tool != nil && res.fence == *fence && res.uid == run.UID {
			results = append(results, *res.tool)
		}
	}
	msg := unstorableMessage(cause)
	next, err := loop.FailUnstorable(run.Status, fence, results, cause.Reason, msg, sc.now)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("ending run %s after %v: %w", sc.key, cause, err))
	}
	steps := r.Steps.All(store.HeldSinks(sc.agent))
	if cause.Segment {
		// A segment was refused: the stored status is sealed already, and
		// sealing its end could only meet the same refusal.
		steps = r.Steps.Unsealed(store.HeldSinks(sc.agent))
	}
	written, err := r.Store.Commit(ctx, store.Write{Run: run, Status: next, Fence: sc.ownedFence, Now: sc.now, Steps: steps})
	if err != nil {
		if again, ok := store.AsUnstorable(err); ok {
			log.Error(again, "the run's status cannot be written, not even to end the run; leaving it to its lease",
				"first", cause.Error())
			if r.Recorder != nil {
				r.Recorder.Eventf(run, nil, warning, exagentv1.EventRunFailed, exagentv1.EventRunFailed,
					"the run's status cannot be written (%s), not even to end it: %s", again.Reason, truncate(again.Error(), 800))
			}
			return ctrl.Result{}, reconcile.TerminalError(again)
		}
		return r.abort(ctx, sc, err) // a conflict or a transient failure: the next turn meets the same refusal
	}
	log.Info("ended a run whose status the apiserver refuses", "reason", cause.Reason, "cause", cause.Error(), "outcomes", len(results))
	sc.run, sc.notes, sc.action = written, nil, loop.Action{}
	r.committed(written)
	sc.noteEnd(written.Status)
	r.publish(sc)
	return ctrl.Result{}, nil
}

// unstorableMessage is the run's status.message: what was refused and
// what to do.
func unstorableMessage(cause *store.UnstorableError) string {
	const known = "so the run cannot be journaled further and was ended; " +
		"the outcomes of the calls that returned are recorded without their results, " +
		"calls whose outcome is unknown are Uncertain (check their effects by hand); "
	detail := strings.TrimSpace(truncate(cause.Error(), 1500))
	switch {
	case cause.Reason == exagentv1.ReasonSegmentQuotaExceeded:
		return fmt.Sprintf("ResourceQuota %q of the run's namespace refused a transcript segment the run had to seal (%s), %s"+
			"raise the quota's count/agentrunsegments.exagent.io or delete ended runs (their segments go with them), "+
			"then create a new run to go on", store.QuotaName(cause.Error()), detail, known)
	case cause.Segment:
		return fmt.Sprintf("the apiserver refused a transcript segment the run had to seal (%s), %s"+
			"create a new run to go on, and report the cause if it persists", detail, known)
	}
	what := "the apiserver refused the run's next status as invalid"
	if cause.Reason == exagentv1.ReasonStatusTooLarge {
		what = "the run's next status is larger than the apiserver accepts"
	}
	return fmt.Sprintf("%s (%s), %screate a new run to go on, and report the cause if it persists", what, detail, known)
}
