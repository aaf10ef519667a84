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

// No run escapes its parent (docs/architecture.md §5, §14). A delegation call's child
// is journaled in status.children with the call's intent, before it is
// created, so whatever becomes of the call the parent knows which run may
// exist. When the parent no longer awaits that child — it ended, or the
// call was closed or asked again before the child was recorded — the
// child is withdrawn: the controller ends it (EndByParent) and, once it
// has ended, its usage is charged and its reservation released (the entry
// is settled). The child checks too, before any IO at each claim
// (CheckParent): a child whose parent ended, is gone or does not await it
// ends itself; one whose parent's call is to be begun again waits.

// withdrawnEntry reports whether the run no longer awaits the child of
// entry e, which is not settled: the run ended; the call is gone from the
// status or closed; it was asked again (Pending: the approval it was begun
// under no longer covers it); or — when env is the current Agent's — it
// can never be begun again, its tool being no delegation tool any more.
// A call in flight, delegated, to be begun again (Allowed, Approved) or
// Uncertain still awaits its child.
func withdrawnEntry(st *Status, env *Env, e *exagentv1.ChildRun) bool {
	if e.Charged {
		return false
	}
	if st.Phase.IsTerminal() {
		return true
	}
	i := findCall(st, e.CallID)
	if i < 0 {
		return true
	}
	c := &st.Calls[i]
	switch c.State {
	case exagentv1.CallSucceeded, exagentv1.CallFailed, exagentv1.CallRefused, exagentv1.CallDenied, exagentv1.CallPending:
		return true
	case exagentv1.CallAllowed, exagentv1.CallApproved:
		return env != nil && !env.standIn() && !env.isDelegation(c.Tool)
	}
	return false
}

// withdrawing reports whether some child of the run is withdrawn and not
// settled yet (env: see withdrawnEntry).
func withdrawing(st *Status, env *Env) bool {
	for i := range st.Children {
		if withdrawnEntry(st, env, &st.Children[i]) {
			return true
		}
	}
	return false
}

// Withdrawing reports whether the run has withdrawn children to end or to
// charge (env is the current Agent's, or nil). For a run that ended, every
// child not settled is withdrawn.
func Withdrawing(s Status, env *Env) bool { return withdrawing(&s, env) }

// UnjournaledChild reports whether an ended run may have a child its
// status does not name: a call left Uncertain with no child entry, as an
// older version (which journaled no child name before the Create) left a
// delegation intent in flight at the run's end. The controller then ends
// the run's children found by label and owner UID.
func UnjournaledChild(s Status) bool {
	if !s.Phase.IsTerminal() {
		return false
	}
	for i := range s.Calls {
		if c := &s.Calls[i]; c.State == exagentv1.CallUncertain && c.Child == "" && findChild(&s, c.ID) < 0 {
			return true
		}
	}
	return false
}

// WithdrawChildren settles the children the run withdrew, from what the
// controller read of them (obs, by child name). A child that does not
// exist, is not this run's child or was replaced is settled with nothing
// charged (a child once recorded still counts as one run of the tree); one
// that has not ended is returned as a ChildWithdrawn event for the
// controller to end; one that ended and whose own children are settled is
// charged to this run's ledger and settled. An owner may call it between
// its steps, and a run that ended too (with an Env of its spec alone): it
// touches no claim and no call.
//
// Touches: children (uid, phase, message, charged), ledger.
func WithdrawChildren(s Status, env *Env, obs map[string]ChildObservation) (Status, []ChildEvent) {
	if !withdrawing(&s, env) {
		return s, nil
	}
	st := clone(s)
	events := withdrawChildren(&st, env, obs)
	return st, events
}

func withdrawChildren(st *Status, env *Env, obs map[string]ChildObservation) []ChildEvent {
	var events []ChildEvent
	for i := range st.Children {
		e := &st.Children[i]
		if !withdrawnEntry(st, env, e) {
			continue
		}
		o, ok := obs[e.Name]
		switch {
		case !ok || o.Missing || o.Foreign || o.Status == nil || (e.UID != "" && o.UID != e.UID):
			if e.UID == "" {
				e.Message = "no child run was created (or it is gone): nothing to charge"
			} else {
				e.Phase, e.Message = "", "the child run was deleted before it ended: nothing of its work is known"
			}
			settleMissing(st, e)
		case !o.Status.Phase.IsTerminal():
			reason, msg := withdrawal(st, env.in.RunName, e)
			events = append(events, ChildEvent{Kind: ChildWithdrawn, Child: e.Name, Reason: reason, Message: msg})
		case subtreeSettled(o.Status):
			charge(&st.Ledger, &o.Status.Ledger)
			e.UID, e.Phase, e.PendingApprovals, e.Charged = o.UID, o.Status.Phase, 0, true
			e.Message = bound(o.Status.Message, maxChildMessage)
			events = append(events, ChildEvent{Kind: ChildEnded, Child: e.Name,
				Message: fmt.Sprintf("withdrawn child run %s ended %s; its usage is charged", e.Name, o.Status.Phase)})
		}
	}
	return events
}

// withdrawal is why the run ends a withdrawn child: the reason and message
// the child is cancelled with.
func withdrawal(st *Status, parent string, e *exagentv1.ChildRun) (string, string) {
	if st.Phase.IsTerminal() {
		return exagentv1.ReasonParentEnded, ParentEndedMessage(parent, st.Phase)
	}
	what := "is gone from its journal"
	if i := findCall(st, e.CallID); i >= 0 {
		c := &st.Calls[i]
		switch c.State {
		case exagentv1.CallPending:
			what = "is asked again: the approval it was begun under no longer covers it"
		case exagentv1.CallAllowed, exagentv1.CallApproved:
			what = fmt.Sprintf("can no longer be begun: tool %q is no delegation tool of the parent's Agent any more", c.Tool)
		default:
			what = fmt.Sprintf("was closed %s before this run was recorded", c.State)
		}
	}
	return exagentv1.ReasonDelegationWithdrawn, fmt.Sprintf("cancelled: the delegation call %s of its parent run %s %s",
		e.CallID, parent, what)
}

// ParentEndedMessage is the message of a child cancelled because its
// parent ended (phase "": was deleted).
func ParentEndedMessage(parent string, phase exagentv1.RunPhase) string {
	what := "ended " + string(phase)
	if phase == "" {
		what = "was deleted"
	}
	return fmt.Sprintf("cancelled: its parent run %s %s", parent, what)
}

// EndByParent cancels a run whose parent no longer awaits it — the parent
// ended or is gone (reason ParentEnded), or withdrew the call the run
// answers (DelegationWithdrawn): as a Cancel, the claim is revoked (its
// reservation charged whole), calls in flight become Uncertain for a
// Resolve to record, pending approvals are Cancelled.
//
// Touches: phase Cancelled (the reason given), message, claim, ledger
// active time, calls in flight, approvals, pendingApprovals.
// Guard: the run has not ended.
func EndByParent(s Status, env *Env, reason, message string, now time.Time) (Status, error) {
	if s.Phase.IsTerminal() {
		return s, notPendingf("run is %s: nothing to cancel", phaseName(s.Phase))
	}
	st := clone(s)
	if st.Claim != nil {
		_, never := env.ActiveTimeLimit()
		settleLost(&st, never, now)
		st.Claim = nil
	}
	closeOpen(&st, exagentv1.ApprovalCancelled, now)
	if anyCall(&st, isUncertain) {
		message += cancelledUncertainNote
	}
	setPhase(&st, exagentv1.PhaseCancelled, reason, message)
	return st, nil
}

// ParentView is what the controller read of a child run's parent (past
// the cache): Missing when it does not exist.
type ParentView struct {
	Missing bool
	UID     string
	Status  *exagentv1.AgentRunStatus
}

// ParentVerdictKind is what a child does about its parent before a claim.
type ParentVerdictKind string

const (
	// ParentAwaits: the parent's call is begun and waits for this very
	// child; the child may run.
	ParentAwaits ParentVerdictKind = "Awaits"
	// ParentWithdrew: the parent ended, is gone, or no longer awaits this
	// child; the child ends itself (EndByParent) before any IO.
	ParentWithdrew ParentVerdictKind = "Withdrew"
	// ParentResumes: the parent's call is to be begun again after its owner
	// was lost (or resolved); the child waits, unclaimed, until the parent
	// awaits it or withdraws it.
	ParentResumes ParentVerdictKind = "Resumes"
)

// ParentVerdict is CheckParent's answer, with the reason and message the
// child shows (ends with, or waits with).
type ParentVerdict struct {
	Kind    ParentVerdictKind
	Reason  string
	Message string
}

// CheckParent decides, before a child run is claimed, whether its parent
// still awaits it: the parent exists with the UID the child records, has
// not ended, and the delegation call the child answers is begun (Started)
// with this child — or no child recorded yet — and, when the parent
// journaled the child's entry, under this child's name and not settled.
// A call to be begun again (Allowed, Approved) or Uncertain means wait;
// anything else means the parent withdrew the child.
func CheckParent(self string, d *exagentv1.Delegation, p ParentView) ParentVerdict {
	parent := d.Parent.Name
	if p.Missing || p.Status == nil || p.UID != d.Parent.UID {
		return ParentVerdict{Kind: ParentWithdrew, Reason: exagentv1.ReasonParentEnded, Message: ParentEndedMessage(parent, "")}
	}
	ps := p.Status
	if ps.Phase.IsTerminal() {
		return ParentVerdict{Kind: ParentWithdrew, Reason: exagentv1.ReasonParentEnded, Message: ParentEndedMessage(parent, ps.Phase)}
	}
	withdrew := func(what string) ParentVerdict {
		return ParentVerdict{Kind: ParentWithdrew, Reason: exagentv1.ReasonDelegationWithdrawn,
			Message: fmt.Sprintf("cancelled: the delegation call %s of its parent run %s %s", d.CallID, parent, what)}
	}
	for i := range ps.Children {
		if e := &ps.Children[i]; e.CallID == d.CallID {
			switch {
			case e.Name != self:
				return withdrew(fmt.Sprintf("journaled child %s, not this run", e.Name))
			case e.Charged:
				return withdrew("is settled without this run")
			}
		}
	}
	var c *exagentv1.ToolCall
	for i := range ps.Calls {
		if ps.Calls[i].ID == d.CallID {
			c = &ps.Calls[i]
		}
	}
	switch {
	case c == nil:
		return withdrew("is gone from its journal")
	case c.Child != "" && c.Child != self:
		return withdrew(fmt.Sprintf("recorded child %s, not this run", c.Child))
	}
	switch c.State {
	case exagentv1.CallStarted:
		return ParentVerdict{Kind: ParentAwaits}
	case exagentv1.CallAllowed, exagentv1.CallApproved, exagentv1.CallUncertain:
		return ParentVerdict{Kind: ParentResumes, Reason: exagentv1.ReasonWaitingForParent, Message: fmt.Sprintf(
			"waiting for its parent run %s: the parent's call %s is %s and is begun again (finding this run) when a "+
				"worker claims the parent; nothing of this run happens meanwhile", parent, d.CallID, c.State)}
	case exagentv1.CallPending:
		return withdrew("is asked again: the approval it was begun under no longer covers it")
	}
	return withdrew(fmt.Sprintf("was closed %s without this run", c.State))
}

// WaitForParent shows, on a run that is not claimed, that it waits for
// its parent (CheckParent said ParentResumes); changed is false when it
// already said so.
//
// Touches: reason, message. Guard: the run is Queued or Approved.
func WaitForParent(s Status, message string) (Status, bool) {
	if s.Phase != exagentv1.PhaseQueued && s.Phase != exagentv1.PhaseApproved {
		return s, false
	}
	msg := truncateUTF8(message, maxMessage)
	if s.Reason == exagentv1.ReasonWaitingForParent && s.Message == msg {
		return s, false
	}
	st := clone(s)
	setPhase(&st, st.Phase, exagentv1.ReasonWaitingForParent, msg)
	return st, true
}
