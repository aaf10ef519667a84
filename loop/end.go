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

// Finish ends the run Succeeded with the model's final answer.
//
// Touches: phase, reason, message, output, claim (nil), ledger active time
// (the unused reservation is refunded: the owner hands back alive).
// Guards: the fence; the cursor is at Finish; nothing is unresolved (no
// call in flight, Uncertain, pending a decision or not yet run).
func Finish(s Status, env *Env, f Fence, output string, now time.Time) (Status, error) {
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	if s.Cursor.Stage != exagentv1.StageFinish {
		return s, conflictf("the model has not given a final answer (cursor at %s)", s.Cursor.Stage)
	}
	if anyCall(&s, unresolved) {
		return s, errorf(KindUncertain, exagentv1.ReasonOutcomeUncertain, "a tool call is still unresolved")
	}
	st := clone(s)
	st.Output = bound(output, maxContent)
	markEnd(&st, st.Output) // conversation_end.go
	releaseClaim(&st, env, now)
	setPhase(&st, exagentv1.PhaseSucceeded, exagentv1.ReasonSucceeded, "the model gave its final answer")
	return st, nil
}

// unresolved: a call that is not closed (no confirmed outcome or refusal).
func unresolved(c *exagentv1.ToolCall) bool {
	switch c.State {
	case exagentv1.CallSucceeded, exagentv1.CallFailed, exagentv1.CallRefused, exagentv1.CallDenied:
		return false
	}
	return true
}

// Fail ends the run Failed for a reason found outside the engine (the
// script is exhausted, the Agent drifted, a permanent engine error). It
// needs no fence: the caller may not own the run. Calls in flight become
// Uncertain in the journal and a live claim's reservation is charged whole,
// since no checkpoint of its owner measured it.
//
// Touches: phase, reason, message, claim (nil), ledger active time, calls
// in flight (Uncertain), pending approvals (Cancelled), pendingApprovals.
// Guard: the run has not ended already.
func Fail(s Status, reason, message string, now time.Time) (Status, error) {
	if s.Phase.IsTerminal() {
		return s, conflictf("run already ended %s", s.Phase)
	}
	if reason == "" {
		reason = string(exagentv1.PhaseFailed)
	}
	st := clone(s)
	if st.Claim != nil {
		settleLost(&st, false, now)
		st.Claim = nil
	}
	closeOpen(&st, exagentv1.ApprovalCancelled, now)
	setPhase(&st, exagentv1.PhaseFailed, reason, message)
	return st, nil
}

// endRun is how an owner transition ends the run (limits, deadline, model
// errors): the owner is alive, so the unused reservation is refunded.
func endRun(st *Status, env *Env, now time.Time, phase exagentv1.RunPhase, reason, message string) {
	releaseClaim(st, env, now)
	approvalState := exagentv1.ApprovalCancelled
	if phase == exagentv1.PhaseExpired {
		approvalState = exagentv1.ApprovalExpired
	}
	closeOpen(st, approvalState, now)
	setPhase(st, phase, reason, message)
}

// closeOpen marks what can no longer happen once the run ends: a call in
// flight has no outcome (Uncertain, never "failed"), and a pending
// approval can no longer be decided.
func closeOpen(st *Status, approvalState exagentv1.ApprovalState, now time.Time) {
	for i := range st.Calls {
		switch c := &st.Calls[i]; {
		case inFlight(c) && findChild(st, c.ID) < 0:
			c.State = exagentv1.CallUncertain
		case waiting(c):
			failWaiting(c, now) // wait.go
		case inFlight(c), delegated(c):
			// A delegation call whose child is journaled (recorded or not):
			// the controller ends the child, so the call fails.
			closeEndedDelegation(st, c, now) // delegate.go
		}
	}
	for i := range st.Approvals {
		if st.Approvals[i].State == exagentv1.ApprovalPending {
			st.Approvals[i].State = approvalState
		}
	}
	countPending(st)
}

// failAction is the action that reports an end.
func failAction(st *Status) Action {
	return Action{Kind: ActFail, Reason: st.Reason, Message: st.Message}
}

// limitExceeded ends the run for a limit and says which.
func limitExceeded(st *Status, env *Env, now time.Time, format string, args ...any) Action {
	endRun(st, env, now, exagentv1.PhaseFailed, exagentv1.ReasonLimitExceeded, fmt.Sprintf(format, args...))
	return failAction(st)
}
