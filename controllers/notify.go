package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/loop"
)

// notifier is the controllers' side of notifications: the journaling
// every status write does (journalTransitions), and the Deliverer that
// sends what is journaled (internal/notify), which reports what could not
// be journaled under its one metric.
type notifier struct {
	client    client.Client // the cache: Agents
	deliverer *notify.Deliverer
}

// journalTransitions journals, in the commit that makes them true, one Pending record
// per event and sink that wants it, and supersedes what the commit
// settled. Called by Store.Commit on every status write.
func (n *notifier) journalTransitions(ctx context.Context, run *exagentv1.AgentRun, next *loop.Status, now time.Time) {
	var sinks []exagentv1.NotifySink
	if len(notify.Transitions(&run.Status, next)) > 0 {
		agent := &exagentv1.Agent{}
		if err := n.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}, agent); err == nil {
			sinks = agent.Spec.Notify
		} // else: an approval not marked notified is still due, and the notifier journals it
	}
	left := notify.Journal(&run.Status, next, string(run.UID), sinks, now) // the one journaling rule (internal/notify)
	for _, e := range left {
		if e.Kind == exagentv1.NotifyApprovalRequested || e.Kind == exagentv1.NotifyApprovalExpiring {
			continue // still due (notify.Due): journaled as room is made
		}
		// The run's own events always have room (notify's approvalRecords);
		// should one not, it is counted and said, never silently lost.
		n.deliverer.Dropped(ctx, run, e, len(next.Notifications))
	}
}

// notifyJournal is the Deliverer's status writer: Store.Commit without a
// fence, its errors told apart as notify.StatusWriter says.
type notifyJournal struct{ store *Store }

func (j notifyJournal) WriteStatus(ctx context.Context, run *exagentv1.AgentRun, next exagentv1.AgentRunStatus, now time.Time) error {
	_, err := j.store.Commit(ctx, run, next, nil, now)
	if u, ok := AsUnstorable(err); ok {
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
	return apierrors.IsConflict(err) || errors.Is(err, ErrConflict)
}
