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
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// pollInterval is how often waitForDecision re-reads the decision it
// created (a decision is applied within moments; a run waits from a watch).
const pollInterval = 250 * time.Millisecond

// waitForDecision re-reads d until the operator set its phase.
func waitForDecision(ctx context.Context, c client.Client, d *exagentv1.ApprovalDecision, timeout time.Duration) (*exagentv1.ApprovalDecision, error) {
	got := &exagentv1.ApprovalDecision{}
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, got); err != nil {
			lastErr = err
			return false, nil // transient: keep waiting until the deadline
		}
		return got.Status.Phase != "", nil
	})
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("interrupted while waiting for approvaldecision.exagent.io/%s; it was created and will still be decided", d.Name)
		}
		msg := fmt.Sprintf("timed out after %s waiting for approvaldecision.exagent.io/%s to be applied or rejected; it was created and the operator will decide it when it runs (kubectl get approvaldecision %s -n %s)",
			timeout, d.Name, d.Name, d.Namespace)
		if lastErr != nil {
			msg += fmt.Sprintf("; last read failed: %v", lastErr)
		}
		return nil, errors.New(msg)
	}
	return got, nil
}

// runCondition is a named predicate on a run, for `wait --for`.
type runCondition struct {
	name string
	met  func(*exagentv1.AgentRun) bool
}

var runConditions = map[string]runCondition{
	"paused": {name: "paused", met: func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseAwaitingApproval || r.Status.Phase == exagentv1.PhaseUncertain
	}},
	"done": {name: "done", met: func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() }},
}

// waitForRun waits, from a watch of the run, until cond holds. A zero
// timeout checks once.
func waitForRun(ctx context.Context, c client.WithWatch, ns, name string, cond runCondition, timeout time.Duration) (*exagentv1.AgentRun, error) {
	run, err := getRun(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	if cond.met(run) {
		return run, nil
	}
	if err := errNotServed(run); err != nil {
		return run, err // it would wait the whole timeout for nothing
	}
	if timeout == 0 {
		return run, fmt.Errorf("run %q is not %s (phase %s)", name, cond.name, orNone(string(run.Status.Phase)))
	}
	err = watchRun(ctx, c, ns, name, timeout, func(r *exagentv1.AgentRun) (bool, error) {
		run = r
		return cond.met(r), nil
	})
	if err != nil {
		if wait.Interrupted(err) && ctx.Err() == nil {
			return run, fmt.Errorf("timed out after %s waiting for run %q to be %s (phase %s)", timeout, name, cond.name, orNone(string(run.Status.Phase)))
		}
		return run, err
	}
	return run, nil
}
