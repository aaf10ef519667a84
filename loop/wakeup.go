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

package loop

import (
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Wakeup returns the next instant the run needs attention by the clock
// alone — a lease to recover, an owner's active time running out, an
// approval expiring, a wait ending, the deadline — for the caller's RequeueAfter. ok is
// false when no clock can change the run (ended, or waiting only for a
// human's Resolve).
func Wakeup(s Status, env *Env) (time.Time, bool) {
	env = env.forRun(&s)
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
	case exagentv1.PhaseWaiting:
		if next, _ := nextWake(&s); !next.IsZero() {
			add(next)
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
