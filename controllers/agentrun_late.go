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

	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// settleEnded deals with what this process still holds of a run that has
// ended. Results of a Cancelled run's calls that were in flight at the
// cancel are journaled into it (the call was left Uncertain; its outcome
// is worth keeping, and nothing runs again); any other result of an ended
// run has nowhere to go. Once no job of the run is left, its claim entry
// is dropped.
func (r *AgentRunReconciler) settleEnded(ctx context.Context, key types.NamespacedName, cached *exagentv1.AgentRun) (err error) {
	results, inFlight := r.mem.inbox.take(key)
	attempt := r.mem.claims.attempt(key, cached.UID)
	defer func() {
		if err == nil && inFlight == 0 {
			r.mem.claims.gone(key, cached.UID)
		}
	}()
	var late []loop.ToolResult
	for _, res := range results {
		if res.tool != nil && res.uid == cached.UID && attempt != 0 && res.fence.Attempt == attempt {
			late = append(late, *res.tool)
		}
	}
	if len(late) == 0 || cached.Status.Phase != exagentv1.PhaseCancelled {
		return nil
	}
	// The cache strips ended runs' journals: read the whole run, and write
	// it back only by CAS on that version.
	run := &exagentv1.AgentRun{}
	if err := r.APIReader.Get(ctx, key, run); err != nil {
		r.mem.inbox.putBack(key, results)
		return fmt.Errorf("reading cancelled run %s for its late outcomes: %w", key, err)
	}
	if run.UID != cached.UID {
		return nil
	}
	env, envErr := r.envConfig().env(run, nil, envExtras{})
	if envErr != nil {
		return nil // a malformed run spec: nothing can be evaluated
	}
	now := r.Clock.Now()
	next, changed := run.Status.DeepCopy(), false
	for _, res := range late {
		st, err := loop.RecordLateOutcome(*next, env, attempt, res, now)
		if err != nil {
			logf.FromContext(ctx).Info("dropping a late result the cancelled run does not expect", "reason", err.Error())
			continue
		}
		next, changed = &st, true
	}
	if !changed {
		return nil
	}
	if _, err := r.Store.Commit(ctx, store.Write{Run: run, Status: *next, Now: now, Steps: r.Steps.All(r.Steps.AgentSinks(ctx, run))}); err != nil {
		r.mem.inbox.putBack(key, results)
		return fmt.Errorf("journaling late outcomes into cancelled run %s: %w", key, err)
	}
	logf.FromContext(ctx).Info("journaled the outcomes of calls that finished after the cancel", "calls", len(late))
	return nil
}

// holdsIO says whether this process has IO of the run in flight, or
// results of it not yet journaled: a Cancelled run's late outcome is on
// its way (the reaper's running).
func (r *AgentRunReconciler) holdsIO(key types.NamespacedName) bool {
	b := r.mem.inbox
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight[key] > 0 || len(b.results[key]) > 0
}
