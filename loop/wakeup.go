package loop

import (
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Wakeup returns the next instant the run needs attention by the clock
// alone — a lease to recover, an owner's active time running out, an
// approval expiring, the deadline — for the caller's RequeueAfter. ok is
// false when no clock can change the run (ended, or waiting only for a
// human's Resolve).
func Wakeup(s Status, env *Env) (time.Time, bool) {
	var next time.Time
	add := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	switch s.Phase {
	case exagentv1.PhaseRunning:
		if c := s.Claim; c != nil {
			add(c.LeaseExpiresAt.Time)
			if _, never := env.ActiveTimeLimit(); !never && c.ClaimedAt != nil {
				add(c.ClaimedAt.Add(s.Ledger.ActiveTimeReserved.Duration))
			}
		}
	case exagentv1.PhaseAwaitingApproval:
		for i := range s.Approvals {
			if a := &s.Approvals[i]; a.State == exagentv1.ApprovalPending && a.ExpiresAt != nil {
				add(a.ExpiresAt.Time)
			}
		}
	case "", exagentv1.PhaseQueued, exagentv1.PhaseApproved:
	default:
		return time.Time{}, false
	}
	if d := env.deadline(); d != nil {
		add(*d)
	}
	return next.UTC(), !next.IsZero()
}
