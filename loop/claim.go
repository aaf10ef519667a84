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
	"fmt"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Start turns a new run into a Queued one.
//
// Touches: phase, reason, message, binding (the current fingerprints),
// history ([system, user]), cursor ({0, Request}).
// Guard: the run was never started (phase "").
func Start(s Status, env *Env, now time.Time) (Status, error) {
	if s.Phase != "" {
		return s, conflictf("run already started (phase %s)", s.Phase)
	}
	st := clone(s)
	b := env.Binding()
	st.Binding = &b
	st.History = nil
	appendMessage(&st, exagentv1.Message{Role: exagentv1.RoleSystem, Content: bound(env.in.Agent.Instructions, maxContent)})
	appendMessage(&st, exagentv1.Message{Role: exagentv1.RoleUser, Content: bound(env.in.Run.Input, maxContent)})
	st.Cursor = exagentv1.Cursor{Step: 0, Stage: exagentv1.StageRequest}
	setPhase(&st, exagentv1.PhaseQueued, exagentv1.ReasonQueued, "waiting for a worker to claim the run")
	if err := checkSize(&st, env, env.budget/ioReserveDivisor, "start"); err != nil {
		return s, err
	}
	return st, nil
}

// Claim makes holder the run's owner with a new attempt: the fence every
// later owner transition checks.
//
// Touches: phase (Running), attempts, claim {holder, attempt, leaseExpiresAt,
// claimedAt}, ledger.activeTimeReserved (the whole remaining balance),
// limits (journaled at the first claim: the limits the run holds from
// then on, limits.go), startedAt (at the first claim: the window
// AgentBudgets charge the run to).
// Guards: phase Queued or Approved; the definition and model did not drift;
// the continuation holds what the next step needs.
func Claim(s Status, env *Env, holder string, now time.Time) (Status, Fence, error) {
	env = env.forRun(&s)
	if holder == "" {
		return s, Fence{}, conflictf("claim needs a holder")
	}
	switch s.Phase {
	case exagentv1.PhaseQueued, exagentv1.PhaseApproved:
	case exagentv1.PhaseRunning:
		if s.Claim != nil && now.Before(s.Claim.LeaseExpiresAt.Time) {
			return s, Fence{}, conflictf("run is claimed by %s (attempt %d) until %s",
				s.Claim.Holder, s.Claim.Attempt, s.Claim.LeaseExpiresAt.UTC().Format(time.RFC3339))
		}
		return s, Fence{}, conflictf("the lease of attempt %d expired: Recover the run before claiming it", attemptOf(s.Claim))
	default:
		return s, Fence{}, notPendingf("a %s run cannot be claimed", phaseName(s.Phase))
	}
	if err := CheckDrift(s, env); err != nil {
		return s, Fence{}, err
	}
	if err := validateContinuation(&s); err != nil {
		return s, Fence{}, err
	}
	st := clone(s)
	journalLimits(&st, env)
	st.Attempts++
	if st.StartedAt == nil {
		// The window an AgentBudget charges the run to: its first claim.
		st.StartedAt = secTimePtr(now)
	}
	f := Fence{Holder: holder, Attempt: st.Attempts}
	st.Claim = &exagentv1.Claim{
		Holder:         holder,
		Attempt:        f.Attempt,
		LeaseExpiresAt: microTime(now.Add(env.lease)),
		ClaimedAt:      microTimePtr(now),
	}
	reserveActive(&st, env)
	setPhase(&st, exagentv1.PhaseRunning, exagentv1.ReasonRunning, fmt.Sprintf("claimed by %s (attempt %d)", holder, f.Attempt))
	return st, f, nil
}

func attemptOf(c *exagentv1.Claim) int64 {
	if c == nil {
		return 0
	}
	return c.Attempt
}

// Checkpoint settles the active time used so far by the current attempt and
// reserves the remaining balance again, so a crash after it loses only the
// time since the checkpoint.
//
// Touches: ledger.activeTimeUsed, ledger.activeTimeReserved, claim.claimedAt.
// Guard: the fence.
func Checkpoint(s Status, env *Env, f Fence, now time.Time) (Status, error) {
	env = env.forRun(&s)
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	st := clone(s)
	settleOwner(&st, env, now)
	st.Claim.ClaimedAt = microTimePtr(now)
	reserveActive(&st, env)
	return st, nil
}

// Release hands the run back voluntarily (shutdown) with nothing in
// flight: the unused active time is refunded and any process may claim it.
// An outstanding model request is simply re-sent (and charged) later.
//
// Touches: phase (Queued or Approved), claim (nil), ledger active time.
// Guards: the fence; no tool call is in flight.
func Release(s Status, env *Env, f Fence, now time.Time) (Status, error) {
	env = env.forRun(&s)
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	if anyCall(&s, inFlight) {
		return s, conflictf("tool calls are in flight: record their outcomes before releasing")
	}
	st := clone(s)
	settleOwner(&st, env, now)
	st.Claim = nil
	setPhase(&st, resumePhase(&st), exagentv1.ReasonReleased, fmt.Sprintf("released by %s (attempt %d)", f.Holder, f.Attempt))
	return st, nil
}

// resumePhase is where an unowned, runnable run waits: Approved when a
// human decision is waiting to be acted on, Queued otherwise.
func resumePhase(s *Status) exagentv1.RunPhase {
	if anyCall(s, func(c *exagentv1.ToolCall) bool { return c.State == exagentv1.CallApproved }) {
		return exagentv1.PhaseApproved
	}
	return exagentv1.PhaseQueued
}

// releaseClaim ends the owner's claim at a pause or an end: the owner is
// alive and hands back, so unused time is refunded.
func releaseClaim(s *Status, env *Env, now time.Time) {
	if s.Claim == nil {
		return
	}
	settleOwner(s, env, now)
	s.Claim = nil
}
