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
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// prepareDecisions is the prologue every deciding path shares — the verbs
// approve, deny, cancel, resolve and answer (decide.go) and the page
// (ui_decide.go) — so that what a decision is bound to and what is
// refused before anything is sent cannot drift between them. It reads the
// run ns/name, refuses a run this operator does not serve, follows a
// decision named after a delegating run to the run of its tree that holds
// the approval, reads the sealed arguments an edit starts from, plans the
// decisions, refuses a call whose payload hash is not --expect-hash, and
// asks RBAC whether the user may decide. askAccess false skips only that
// last question: a client dry run sends nothing.
func prepareDecisions(ctx context.Context, c client.Client, ns, name string, req decisionRequest, now time.Time,
	askAccess bool) ([]*exagentv1.ApprovalDecision, error) {
	run, err := getRun(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	if err := errNotServed(run); err != nil {
		return nil, err
	}
	if k := req.Kind; (k == exagentv1.DecisionApprove || k == exagentv1.DecisionDeny || k == exagentv1.DecisionAnswer) && req.ApprovalID == "" {
		// Named after a run whose tree holds the approval (tree.go).
		if run, err = delegatedTarget(ctx, c, run); err != nil {
			return nil, err
		}
	}
	if req.edits() && sealed(run) {
		// The call to edit may have its arguments in a segment.
		segs, err := newSegmentReader(c).named(ctx, run, refNames(run, nil))
		if err != nil {
			return nil, readError(run, "read", err)
		}
		if run, err = withValues(run, segs); err != nil {
			return nil, err
		}
	}
	decisions, err := planDecisions(run, req, now)
	if err != nil {
		return nil, err
	}
	if err := checkExpectedHash(run, req, decisions); err != nil {
		return nil, err
	}
	if askAccess {
		// Before anything is sent: a refusal RBAC would give says what is
		// missing (access.go).
		if err := checkMayDecide(ctx, c, run, req.Kind); err != nil {
			return nil, err
		}
	}
	return decisions, nil
}
