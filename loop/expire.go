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
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Expire applies the UTC clocks to a run nobody owns: the deadline (runs
// not yet started — waiting for their Agent —, Queued, AwaitingApproval,
// Approved or Waiting end Expired, DeadlineExceeded) and
// each pending approval's expiry (the run ends Expired, ApprovalExpired;
// with onExpire Continue — the rule's that asked, else the policy's — the
// call is Refused, the model told, and the run goes on: expireAndContinue).
// The caller commits the result with CAS, so the check and the change are
// atomic against a concurrent decision. changed is false when nothing was
// due. A Running run's owner meets the deadline in Step; an Uncertain run
// waits for its Resolve (the evidence matters more than the clock) and
// meets the deadline at its next Step.
//
// Touches: phase, reason, message, approvals (Pending → Expired),
// pendingApprovals; with Continue, the expired approvals' calls (Refused,
// with their outcome).
func Expire(s Status, env *Env, now time.Time) (Status, bool, error) {
	switch {
	case s.Phase == "", s.Phase == exagentv1.PhaseQueued, s.Phase == exagentv1.PhaseAwaitingApproval,
		s.Phase == exagentv1.PhaseApproved, s.Phase == exagentv1.PhaseWaiting:
	case AwaitingChildren(s): // nobody owns a run whose children work (delegate.go)
	default:
		return s, false, nil
	}
	st := clone(s)
	if d := env.deadline(); d != nil && !now.Before(*d) {
		closeOpen(&st, exagentv1.ApprovalExpired, now)
		setPhase(&st, exagentv1.PhaseExpired, exagentv1.ReasonDeadlineExceeded,
			fmt.Sprintf("the deadline %s passed", d.Format(time.RFC3339)))
		return st, true, nil
	}
	if st.Phase != exagentv1.PhaseAwaitingApproval {
		return s, false, nil
	}
	// Each due approval meets its own rule's onExpire (else the policy's):
	// one that stops ends the run; when every due one continues, they are
	// Expired, their calls Refused, and the run goes on.
	var stop *exagentv1.Approval
	due := false
	for i := range st.Approvals {
		a := &st.Approvals[i]
		if a.State != exagentv1.ApprovalPending || a.ExpiresAt == nil || now.Before(a.ExpiresAt.Time) {
			continue
		}
		due = true
		if stop == nil && env.onExpireOf(a.Rule) == exagentv1.OnExpireStop {
			stop = a
		}
	}
	switch {
	case !due:
		return s, false, nil
	case stop != nil:
		id, at := stop.ID, stop.ExpiresAt.UTC().Format(time.RFC3339)
		closeOpen(&st, exagentv1.ApprovalExpired, now)
		setPhase(&st, exagentv1.PhaseExpired, exagentv1.ReasonApprovalExpired,
			fmt.Sprintf("approval %s expired at %s with no decision", id, at))
		return st, true, nil
	}
	expireAndContinue(&st, now)
	return st, true, nil
}

// expireAndContinue applies onExpire Continue: each pending approval whose
// expiry came is Expired and its call Refused without running, with a
// result that tells the model nobody approved it in time; once nothing is
// pending the run is Approved, and a worker goes on. It reports whether an
// approval expired.
func expireAndContinue(st *Status, now time.Time) bool {
	var expired []string
	for i := range st.Approvals {
		a := &st.Approvals[i]
		if a.State != exagentv1.ApprovalPending || a.ExpiresAt == nil || now.Before(a.ExpiresAt.Time) {
			continue
		}
		a.State = exagentv1.ApprovalExpired
		at := a.ExpiresAt.UTC().Format(time.RFC3339)
		if j := findCall(st, a.CallID); j >= 0 {
			c := &st.Calls[j]
			c.State = exagentv1.CallRefused
			c.Outcome = &exagentv1.CallOutcome{Result: fmt.Sprintf(
				"Nobody approved the call in time: its approval expired at %s (policy onExpire: Continue). The call was not run.", at)}
			if a.IsQuestion() {
				c.Outcome.Result = fmt.Sprintf(
					"Nobody answered the question in time: it expired at %s (policy onExpire: Continue). No answer was given.", at)
			}
		}
		expired = append(expired, a.ID)
	}
	if len(expired) == 0 {
		return false
	}
	afterDecision(st, fmt.Sprintf("approval %s expired with no decision; the model will be told", strings.Join(expired, ", ")))
	return true
}
