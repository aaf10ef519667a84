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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// resumeDecided commits a decision's transition of a run together with
// the run's next turn — the claim and the first intent — in one CAS write,
// then dispatches that intent's IO: the approve → intent path costs one
// write and no watch hop between the decision and the resume (docs/architecture.md
// §8). decided is loop.Decide's status computed from run at now. The turn
// is the run controller's own (turn): the Agent's drift check at the
// claim and begin-effect's re-check of the approval against the call run
// exactly as when a worker resumes the run, and the commit's CAS on run's
// resourceVersion makes a decision judged on an outdated copy fail as a
// conflict. committed runs right after the commit (the decision's Event
// then precedes the run's own).
//
// ok is false when the manager is stopping: nothing was written and the
// caller commits the decision alone.
func (r *AgentRunReconciler) resumeDecided(ctx context.Context, run *exagentv1.AgentRun, decided loop.Status, now time.Time,
	committed func(*exagentv1.AgentRun)) (written *exagentv1.AgentRun, ok bool, err error) {
	if !r.workers.enter() {
		return nil, false, nil
	}
	defer r.workers.leave()
	key := client.ObjectKeyFromObject(run)
	defer r.mem.turns.take(key)()
	sc := &scope{key: key, now: now, run: run, status: decided, changed: true}
	agent := &exagentv1.Agent{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, true, fmt.Errorf("getting agent of run %s: %w", key, err)
		}
		agent = nil
	}
	sc.agent = agent
	if _, err := r.turn(ctx, sc, committed); err != nil {
		r.mem.inbox.putBack(sc.key, sc.results)
		return nil, true, err
	}
	if sc.run == run {
		return nil, true, fmt.Errorf("run %s: the decision's commit did not happen (stopping)", key)
	}
	return sc.run, true, nil
}

// resumer is what the decision controller needs of the run controller.
type resumer interface {
	resumeDecided(ctx context.Context, run *exagentv1.AgentRun, decided loop.Status, now time.Time,
		committed func(*exagentv1.AgentRun)) (*exagentv1.AgentRun, bool, error)
}
