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
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// corruptHint tells the person reading a CorruptStatus reason what it
// means and what to do.
const corruptHint = "; the stored status contradicts itself (edited by hand, or restored from a bad copy) " +
	"and the run cannot go on safely: create a new run"

// corruptf is the error of a status that no transition could have written.
// It is of KindInvalidContinuation, so IsPermanent: the caller ends the run
// with Fail(s, exagentv1.ReasonCorruptStatus, message).
func corruptf(format string, args ...any) *Error {
	e := errorf(KindInvalidContinuation, exagentv1.ReasonCorruptStatus, format, args...)
	e.Message += corruptHint
	return e
}

// checkIntegrity refuses a status whose parts contradict each other, before
// any transition looks an entry up by a stored id: every call and approval
// has a unique id and a known state, every approval names a call of the
// journal, no call belongs to a step past the cursor, and the phase is one
// the engine knows. Omitted data (an empty transcript, a missing outcome)
// is validateContinuation's: this check holds for a run in any phase, even
// one never started.
func checkIntegrity(s *Status) error {
	if !knownPhase(s.Phase) {
		return corruptf("status.phase %q is not a phase of AgentRun", s.Phase)
	}
	if s.Cursor.Step < 0 {
		return corruptf("status.cursor.step is %d", s.Cursor.Step)
	}
	calls := make(map[string]int, len(s.Calls))
	for i := range s.Calls {
		c := &s.Calls[i]
		if c.ID == "" {
			return corruptf("status.calls[%d] has no id", i)
		}
		if j, dup := calls[c.ID]; dup {
			return corruptf("status.calls[%d] and status.calls[%d] have the same id %q", j, i, c.ID)
		}
		calls[c.ID] = i
		if !knownCallState(c.State) {
			return corruptf("call %q has unknown state %q", c.ID, c.State)
		}
		if c.Step < 0 || c.Step > s.Cursor.Step {
			return corruptf("call %q belongs to step %d, outside steps 0..%d of the cursor", c.ID, c.Step, s.Cursor.Step)
		}
	}
	approvals := make(map[string]bool, len(s.Approvals))
	for i := range s.Approvals {
		a := &s.Approvals[i]
		if a.ID == "" {
			return corruptf("status.approvals[%d] has no id", i)
		}
		if approvals[a.ID] {
			return corruptf("approval id %q appears twice in status.approvals", a.ID)
		}
		approvals[a.ID] = true
		if !knownApprovalState(a.State) {
			return corruptf("approval %q has unknown state %q", a.ID, a.State)
		}
		if _, ok := calls[a.CallID]; !ok {
			return corruptf("approval %q names call %q, which is not in status.calls", a.ID, a.CallID)
		}
		if (a.Kind == exagentv1.KindQuestion) != (a.Question != nil) || (a.State == exagentv1.ApprovalAnswered && a.Question == nil) {
			return corruptf("approval %q: kind %q and question do not agree", a.ID, a.Kind)
		}
	}
	return nil
}

func knownPhase(p exagentv1.RunPhase) bool {
	switch p {
	case "", exagentv1.PhaseQueued, exagentv1.PhaseRunning, exagentv1.PhaseAwaitingApproval, exagentv1.PhaseApproved,
		exagentv1.PhaseWaiting, exagentv1.PhaseSucceeded, exagentv1.PhaseFailed, exagentv1.PhaseDenied, exagentv1.PhaseCancelled,
		exagentv1.PhaseExpired, exagentv1.PhaseUncertain:
		return true
	}
	return false
}

func knownCallState(st exagentv1.CallState) bool {
	switch st {
	case exagentv1.CallProposed, exagentv1.CallAllowed, exagentv1.CallPending, exagentv1.CallApproved,
		exagentv1.CallStarted, exagentv1.CallUncertain, exagentv1.CallSucceeded, exagentv1.CallFailed,
		exagentv1.CallRefused, exagentv1.CallDenied:
		return true
	}
	return false
}

func knownApprovalState(st exagentv1.ApprovalState) bool {
	switch st {
	case exagentv1.ApprovalPending, exagentv1.ApprovalApproved, exagentv1.ApprovalDenied,
		exagentv1.ApprovalCancelled, exagentv1.ApprovalExpired, exagentv1.ApprovalAnswered:
		return true
	}
	return false
}
