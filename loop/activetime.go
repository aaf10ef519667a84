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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Active time (docs/architecture.md §4.7): a claim reserves the whole remaining
// balance in the same write that claims; only the owner's own checkpoint
// or hand-back returns the unused part; a dead or revoked owner's
// reservation is charged whole, never refunded. Human waiting has no claim
// and therefore no charge.

// reserveActive reserves the remaining balance for a new claim or checkpoint.
// With no limit nothing is reserved.
func reserveActive(s *Status, env *Env) {
	limit, never := env.ActiveTimeLimit()
	if never {
		s.Ledger.ActiveTimeReserved = metav1.Duration{}
		return
	}
	rem := limit - s.Ledger.ActiveTimeUsed.Duration
	if rem < 0 {
		rem = 0
	}
	s.Ledger.ActiveTimeReserved = metav1.Duration{Duration: rem}
}

// elapsedActive is the time since the claim (or its last checkpoint).
func elapsedActive(s *Status, now time.Time) time.Duration {
	if s.Claim == nil || s.Claim.ClaimedAt == nil {
		return 0
	}
	d := now.UTC().Truncate(time.Microsecond).Sub(s.Claim.ClaimedAt.Time)
	if d < 0 {
		return 0
	}
	return d
}

// settleOwner charges what the current owner used, at most its reservation,
// and returns the rest.
func settleOwner(s *Status, env *Env, now time.Time) {
	charge := elapsedActive(s, now)
	if _, never := env.ActiveTimeLimit(); !never && charge > s.Ledger.ActiveTimeReserved.Duration {
		charge = s.Ledger.ActiveTimeReserved.Duration
	}
	s.Ledger.ActiveTimeUsed.Duration += charge
	s.Ledger.ActiveTimeReserved = metav1.Duration{}
}

// settleLost charges a lost (dead or revoked) owner's whole reservation.
// With no limit (unlimited) there is no reservation; the time up to the
// lease's end is charged instead so the ledger still shows the owner's time.
func settleLost(s *Status, unlimited bool, now time.Time) {
	charge := s.Ledger.ActiveTimeReserved.Duration
	if unlimited && s.Claim != nil {
		end := now
		if s.Claim.LeaseExpiresAt.Time.Before(end) {
			end = s.Claim.LeaseExpiresAt.Time
		}
		charge = elapsedActive(s, end)
	}
	s.Ledger.ActiveTimeUsed.Duration += charge
	s.Ledger.ActiveTimeReserved = metav1.Duration{}
}

// activeExhausted reports whether the owner has used its whole reservation.
func activeExhausted(s *Status, env *Env, now time.Time) bool {
	if _, never := env.ActiveTimeLimit(); never {
		return false
	}
	return elapsedActive(s, now) >= s.Ledger.ActiveTimeReserved.Duration
}

// ActiveTimeLeft is how long the current owner may still work before its
// reservation (the whole remaining balance, reserved at its claim or last
// checkpoint) is used up: the controller bounds the IO it dispatches by
// it, so a call started near the end of the balance does not run past
// it. ok is false when the run has no active-time limit or no owner.
func ActiveTimeLeft(s Status, env *Env, now time.Time) (left time.Duration, ok bool) {
	env = env.forRun(&s)
	if _, never := env.ActiveTimeLimit(); never || s.Claim == nil {
		return 0, false
	}
	return max(s.Ledger.ActiveTimeReserved.Duration-elapsedActive(&s, now), 0), true
}
