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
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// reportDropped is the notify step's report (CommitSteps.dropped) of the
// notifications a commit could not journal, under the Deliverer's one
// metric. An approval's event is still due (notify.Due) and journaled as
// room is made; the run's own events always have room (notify's
// approvalRecords) — should one not, it is counted and said, never
// silently lost.
func reportDropped(d *notify.Deliverer) func(context.Context, *exagentv1.AgentRun, *loop.Status, []notify.Event) {
	return func(ctx context.Context, run *exagentv1.AgentRun, next *loop.Status, left []notify.Event) {
		for _, e := range left {
			if e.Kind == exagentv1.NotifyApprovalRequested || e.Kind == exagentv1.NotifyInputRequested || e.Kind == exagentv1.NotifyApprovalExpiring {
				continue
			}
			d.Dropped(ctx, run, e, len(next.Notifications))
		}
	}
}

// notifyJournal is the Deliverer's status writer: Store.Commit without a
// fence, its errors told apart as notify.StatusWriter says.
type notifyJournal struct {
	store *store.Store
	steps *store.CommitSteps
}

func (j notifyJournal) WriteStatus(ctx context.Context, run *exagentv1.AgentRun, next exagentv1.AgentRunStatus, now time.Time) error {
	_, err := j.store.Commit(ctx, store.Write{Run: run, Status: next, Now: now, Steps: j.steps.All(j.steps.AgentSinks(ctx, run))})
	if u, ok := store.AsUnstorable(err); ok {
		return &notify.UnstorableError{Reason: u.Reason, Err: u}
	}
	if apierrorsIsConflict(err) {
		return fmt.Errorf("%w: %w", notify.ErrConflict, err)
	}
	return err
}

// apierrorsIsConflict: a write that lost its compare-and-swap, as the
// apiserver or the Store says it (the deliverer's and the reaper's journals).
func apierrorsIsConflict(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, store.ErrConflict)
}
