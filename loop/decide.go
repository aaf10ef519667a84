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
	"github.com/exagent-io/exagent/internal/canonical"
)

// Decide applies one ApprovalDecision: it dispatches on d.Decision to
// Approve, Deny, Cancel or Resolve. Every decision is idempotent by
// operationID (d.OperationID, else d.Name): the same operation with the
// same decision, target, payload hash, revision, actor and outcome returns
// its stored receipt (from status.receipts, or from d.Sealed when it was
// sealed: see NeedSealedReceipts) and the state unchanged, with a nil
// error; the same operationID with anything different is a conflict.
func Decide(s Status, env *Env, d DecisionCmd, now time.Time) (Status, exagentv1.Receipt, error) {
	switch d.Decision {
	case exagentv1.DecisionApprove:
		return Approve(s, env, d, now)
	case exagentv1.DecisionDeny:
		return Deny(s, env, d, now)
	case exagentv1.DecisionCancel:
		return Cancel(s, env, d, now)
	case exagentv1.DecisionResolve:
		return Resolve(s, env, d, now)
	case exagentv1.DecisionAnswer:
		return Answer(s, env, d, now)
	}
	return s, exagentv1.Receipt{}, conflictf("decision %q is not Approve, Deny, Cancel, Resolve or Answer", d.Decision)
}

// decision is the shared front of every decision: operation identity,
// idempotent replay, and the policy's authorization. replay is non-nil
// when the operation was already applied.
type decision struct {
	cmd     DecisionCmd
	receipt exagentv1.Receipt
}

func prepare(s *Status, env *Env, d DecisionCmd, kind exagentv1.DecisionKind, now time.Time) (*decision, *exagentv1.Receipt, error) {
	if d.Decision != "" && d.Decision != kind {
		return nil, nil, conflictf("decision %q sent to %s", d.Decision, kind)
	}
	d.Decision = kind
	op := d.OperationID
	if op == "" {
		op = d.Name
	}
	if op == "" {
		return nil, nil, conflictf("a decision needs an operationID (or a name)")
	}
	d.OperationID = op
	target := d.ApprovalID
	if kind == exagentv1.DecisionResolve {
		target = d.CallID
	}
	actor := d.Actor
	r := exagentv1.Receipt{
		OperationID: op, DecisionName: d.Name, Decision: string(kind), Target: target,
		PayloadHash: d.PayloadHash, Revision: d.Revision, Actor: &actor, AppliedAt: secTimePtr(now),
	}
	if kind == exagentv1.DecisionResolve {
		r.Outcome = d.Outcome
	}
	if kind == exagentv1.DecisionApprove {
		if d.Arguments != "" {
			_, h, err := editedArgs(d.Arguments)
			if err != nil {
				return nil, nil, err
			}
			r.ArgsHash = h
		}
		if d.Scope == exagentv1.ScopeRun {
			r.Scope = d.Scope
		}
	}
	if kind == exagentv1.DecisionAnswer {
		h, err := answerHash(d.Action, d.Answer)
		if err != nil {
			return nil, nil, err
		}
		r.AnswerHash = h
	}
	if stored := findReceipt(s, d.Sealed, op); stored != nil {
		if diff := receiptDiff(stored, &r); diff != "" {
			return nil, nil, conflictf("operation %q was already applied with a different %s", op, diff)
		}
		return nil, stored.DeepCopy(), nil
	}
	if err := AuthorizeDecision(env.policy.spec, s, d.ApprovalID, env.in.Run, d.Identities, d.Actor); err != nil {
		return nil, nil, err
	}
	if err := AuthorizeAncestors(d.Ancestors, d.AncestorIdentities, d.Actor); err != nil {
		return nil, nil, err
	}
	// Cancel only stops work, so it applies even to a status that
	// contradicts itself; every other decision looks entries up by the ids
	// the status stores, and must not act on a corrupt one.
	if kind != exagentv1.DecisionCancel {
		if err := checkIntegrity(s); err != nil {
			return nil, nil, err
		}
	}
	return &decision{cmd: d, receipt: r}, nil, nil
}

// findReceipt returns the receipt of operation op: in the status, or
// among the sealed ones the caller read.
func findReceipt(s *Status, sealed []exagentv1.Receipt, op string) *exagentv1.Receipt {
	for i := range s.Receipts {
		if s.Receipts[i].OperationID == op {
			return &s.Receipts[i]
		}
	}
	for i := range sealed {
		if sealed[i].OperationID == op {
			return &sealed[i]
		}
	}
	return nil
}

// NeedSealedReceipts tells whether a decision must be given the run's
// sealed receipts (DecisionCmd.Sealed): its operation (operationID, else
// its name) is not among status.receipts and the chain holds some.
func NeedSealedReceipts(s Status, d DecisionCmd) bool {
	if s.Transcript == nil || s.Transcript.Receipts == 0 {
		return false
	}
	op := d.OperationID
	if op == "" {
		op = d.Name
	}
	for i := range s.Receipts {
		if s.Receipts[i].OperationID == op {
			return false
		}
	}
	return true
}

// receiptDiff names what makes b a different decision from the stored a.
func receiptDiff(a, b *exagentv1.Receipt) string {
	var diffs []string
	if a.Decision != b.Decision {
		diffs = append(diffs, fmt.Sprintf("decision (%s, now %s)", a.Decision, b.Decision))
	}
	if a.Target != b.Target {
		diffs = append(diffs, fmt.Sprintf("target (%q, now %q)", a.Target, b.Target))
	}
	if a.PayloadHash != b.PayloadHash {
		diffs = append(diffs, "payloadHash")
	}
	if a.Revision != b.Revision {
		diffs = append(diffs, fmt.Sprintf("revision (%d, now %d)", a.Revision, b.Revision))
	}
	if a.Outcome != b.Outcome {
		diffs = append(diffs, fmt.Sprintf("outcome (%s, now %s)", a.Outcome, b.Outcome))
	}
	if a.ArgsHash != b.ArgsHash {
		diffs = append(diffs, "edited arguments")
	}
	if a.AnswerHash != b.AnswerHash {
		diffs = append(diffs, "answer")
	}
	if a.Scope != b.Scope {
		diffs = append(diffs, fmt.Sprintf("scope (%s, now %s)", scopeName(a.Scope), scopeName(b.Scope)))
	}
	var au, bu, aid, bid string
	if a.Actor != nil {
		au, aid = a.Actor.Username, a.Actor.UID
	}
	if b.Actor != nil {
		bu, bid = b.Actor.Username, b.Actor.UID
	}
	if au != bu || aid != bid {
		diffs = append(diffs, fmt.Sprintf("actor (%q, now %q)", au, bu))
	}
	return strings.Join(diffs, ", ")
}

// findPendingApproval applies the guards shared by Approve and Deny: the
// run awaits approval, the approval exists and is still Pending, the
// decision saw its exact revision and payload, and neither the approval's
// expiry nor the deadline has passed (checked here, inside the caller's CAS).
func findPendingApproval(s *Status, env *Env, d DecisionCmd, now time.Time) (int, error) {
	if s.Phase != exagentv1.PhaseAwaitingApproval {
		if i := findApproval(s, d.ApprovalID); i >= 0 && s.Approvals[i].State == exagentv1.ApprovalExpired && !s.Phase.IsTerminal() {
			// onExpire Continue went on without it: the decision comes too late.
			return -1, errorf(KindExpired, exagentv1.ReasonApprovalExpired, "approval %q expired with no decision; the run went on without the call", d.ApprovalID)
		}
		return -1, notPendingf("run is %s: no approval is pending", phaseName(s.Phase))
	}
	i := findApproval(s, d.ApprovalID)
	if i < 0 {
		return -1, notPendingf("run has no approval %q", d.ApprovalID)
	}
	a := &s.Approvals[i]
	switch a.State {
	case exagentv1.ApprovalPending:
	case exagentv1.ApprovalExpired:
		return -1, errorf(KindExpired, exagentv1.ReasonApprovalExpired, "approval %q expired", a.ID)
	default:
		return -1, conflictf("approval %q was already decided (%s by %s)", a.ID, a.State, actorString(a.Actor))
	}
	if d.Revision != a.Revision || d.Revision != s.Revision {
		return -1, conflictf("the decision saw revision %d; approval %q is at revision %d (run at %d)",
			d.Revision, a.ID, a.Revision, s.Revision)
	}
	if err := checkVersion(a, d); err != nil {
		return -1, err
	}
	// An approval's expiry refuses a late yes; a no that arrives at (or
	// after) the instant of expiry, before the expiry was committed, stays
	// a no: it ends the call as the expiry would have, with its reason.
	if a.ExpiresAt != nil && !now.Before(a.ExpiresAt.Time) && (d.Decision == exagentv1.DecisionApprove || d.Decision == exagentv1.DecisionAnswer) {
		return -1, errorf(KindExpired, exagentv1.ReasonApprovalExpired,
			"approval %q expired at %s", a.ID, a.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if dl := env.deadline(); dl != nil && !now.Before(*dl) {
		return -1, errorf(KindExpired, exagentv1.ReasonDeadlineExceeded, "the run's deadline %s passed", dl.Format(time.RFC3339))
	}
	c := findCall(s, a.CallID)
	if c < 0 {
		return -1, corruptf("approval %q names call %q, which is not in status.calls", a.ID, a.CallID)
	}
	if st := s.Calls[c].State; st != exagentv1.CallPending {
		return -1, corruptf("approval %q is pending but call %q is %s", a.ID, a.CallID, st)
	}
	return i, nil
}

// Deny records a human's refusal of one pending call. With onDeny Stop
// (the default) the run ends Denied at once and the other pending calls
// never run; with Continue the call is closed with a message telling the
// model who denied it and why, and the run resumes once nothing is pending.
//
// Touches: as Approve; the call becomes Denied with that message; with
// Stop, phase Denied and the other pending approvals Cancelled.
func Deny(s Status, env *Env, d DecisionCmd, now time.Time) (Status, exagentv1.Receipt, error) {
	dec, replay, err := prepare(&s, env, d, exagentv1.DecisionDeny, now)
	if replay != nil || err != nil {
		return s, receiptOf(replay), err
	}
	i, err := findPendingApproval(&s, env, dec.cmd, now)
	if err != nil {
		return s, exagentv1.Receipt{}, err
	}
	if err := notAnApproval(&s.Approvals[i]); err != nil {
		return s, exagentv1.Receipt{}, err
	}
	st := clone(s)
	a := decideApproval(&st, i, dec, exagentv1.ApprovalDenied)
	c := &st.Calls[findCall(&st, a.CallID)]
	c.State = exagentv1.CallDenied
	text := fmt.Sprintf("Denied by %s", actorString(a.Actor))
	if a.Reason != "" {
		text += ": " + a.Reason
	}
	c.Outcome = &exagentv1.CallOutcome{Result: bound(text+". The call was not run.", maxContent)}
	if env.onDeny() == exagentv1.OnDenyStop {
		closeOpen(&st, exagentv1.ApprovalCancelled, now)
		setPhase(&st, exagentv1.PhaseDenied, exagentv1.ReasonDenied,
			fmt.Sprintf("call %s (%s) denied by %s: %s", c.ID, c.Tool, actorString(a.Actor), a.Reason))
	} else {
		afterDecision(&st, fmt.Sprintf("approval %s denied by %s; the model will be told", a.ID, actorString(a.Actor)))
	}
	return commitDecision(s, st, env, dec)
}

// checkVersion checks that d is on the version of the call a stands for
// now: the model's (a.payloadHash) or, once an approver edited it under a
// quorum, the edited one — a vote on the model's version then no longer
// counts. A Deny or Cancel of either version stands: refusing is always safe.
func checkVersion(a *exagentv1.Approval, d DecisionCmd) error {
	current := approvedHash(a)
	if d.PayloadHash == current {
		return nil
	}
	if a.Edit != nil && d.PayloadHash == a.PayloadHash {
		if d.Decision != exagentv1.DecisionApprove {
			return nil
		}
		return conflictf("the call of approval %q was edited by %s: the edited call's payloadHash is %s; a vote on the model's version (%s) "+
			"does not count — look at the edited call (kubectl approve show) and vote again", a.ID, actorString(&a.Edit.Editor),
			canonical.Short(current), canonical.Short(a.PayloadHash))
	}
	return conflictf("the decision's payloadHash %s is not the approval's %s", canonical.Short(d.PayloadHash), canonical.Short(current))
}

// approvedHash is the payload hash of the version of the call a stands
// for (exagentv1.Approval.CurrentPayloadHash).
func approvedHash(a *exagentv1.Approval) string { return a.CurrentPayloadHash() }

func scopeName(s exagentv1.DecisionScope) string {
	if s == "" {
		return string(exagentv1.ScopeCall)
	}
	return string(s)
}

func decideApproval(st *Status, i int, dec *decision, state exagentv1.ApprovalState) *exagentv1.Approval {
	a := &st.Approvals[i]
	actor := dec.cmd.Actor
	a.State = state
	a.Decision = string(dec.cmd.Decision)
	a.Actor = &actor
	a.Reason = bound(dec.cmd.Reason, maxMessage)
	return a
}

// afterDecision moves the run to Approved once no approval is pending.
func afterDecision(st *Status, what string) {
	countPending(st)
	if st.PendingApprovals == 0 {
		setPhase(st, exagentv1.PhaseApproved, exagentv1.ReasonApproved, what+"; every approval is decided, waiting for a worker")
		return
	}
	st.Message = bound(fmt.Sprintf("%s; %d approval(s) still pending", what, st.PendingApprovals), maxMessage)
}

func commitDecision(s, st Status, env *Env, dec *decision) (Status, exagentv1.Receipt, error) {
	st.Receipts = append(st.Receipts, dec.receipt)
	if err := checkSize(&st, env, 0, "decision"); err != nil {
		return s, exagentv1.Receipt{}, err
	}
	return st, *dec.receipt.DeepCopy(), nil
}

func receiptOf(r *exagentv1.Receipt) exagentv1.Receipt {
	if r == nil {
		return exagentv1.Receipt{}
	}
	return *r
}

// Cancel ends a run that has not ended, in any phase — not started yet,
// Queued, Running, AwaitingApproval, Approved or Uncertain. A Running run's
// claim is revoked (its reservation is charged whole: no checkpoint
// measured it), so its owner can commit nothing more and dispatches
// nothing new; any call in flight is recorded Uncertain inside the
// Cancelled run — its effect may still happen — for a Resolve to record
// what became of it. Pending approvals are Cancelled.
// With an approvalID, that approval must be pending and match revision and
// payload. Revision 0 means "whatever the current revision": cancelling
// only ever stops work, so an unversioned GitOps cancel is accepted; any
// other revision must be the current one.
//
// Touches: phase Cancelled, reason, message, claim, ledger active time,
// calls in flight, approvals, pendingApprovals, receipts.
func Cancel(s Status, env *Env, d DecisionCmd, now time.Time) (Status, exagentv1.Receipt, error) {
	env = env.forRun(&s) // the limits the run holds (limits.go)
	dec, replay, err := prepare(&s, env, d, exagentv1.DecisionCancel, now)
	if replay != nil || err != nil {
		return s, receiptOf(replay), err
	}
	if s.Phase.IsTerminal() {
		return s, exagentv1.Receipt{}, notPendingf("run is %s: nothing to cancel", phaseName(s.Phase))
	}
	if d.Revision != 0 && d.Revision != s.Revision {
		return s, exagentv1.Receipt{}, conflictf("the decision saw revision %d; the run is at %d", d.Revision, s.Revision)
	}
	st := clone(s)
	if d.ApprovalID != "" {
		i, err := findPendingApproval(&s, env, dec.cmd, now)
		if err != nil {
			return s, exagentv1.Receipt{}, err
		}
		decideApproval(&st, i, dec, exagentv1.ApprovalCancelled)
	}
	if st.Claim != nil {
		_, never := env.ActiveTimeLimit()
		settleLost(&st, never, now)
		st.Claim = nil
	}
	closeOpen(&st, exagentv1.ApprovalCancelled, now)
	msg := fmt.Sprintf("cancelled by %s", actorString(&dec.cmd.Actor))
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	if anyCall(&st, isUncertain) {
		msg += cancelledUncertainNote
	}
	setPhase(&st, exagentv1.PhaseCancelled, exagentv1.ReasonCancelled, msg)
	return commitDecision(s, st, env, dec)
}

// cancelledUncertainNote ends the message of a run cancelled with calls
// whose outcome nobody knows.
const cancelledUncertainNote = " (some calls have no confirmed outcome: see calls in state Uncertain; " +
	"kubectl approve resolve records what happened)"

// Resolve records a human's evidence-backed outcome of one Uncertain call:
// Succeeded or Failed closes it (resolvedBy = the actor, with the
// evidence; the model sees it), Retry puts it back to run again with the
// same idempotency key. When no call is Uncertain any more the run becomes
// Approved and a worker's Claim resumes it; otherwise it stays Uncertain.
//
// A Cancelled run may still hold Uncertain calls (in flight when it was
// cancelled). Resolving one there is for the record only: Succeeded or
// Failed is journaled with its evidence and the run stays Cancelled —
// nothing runs again, so Retry is refused.
//
// Touches: the call (state, outcome), receipts, phase/reason/message.
// Guards: see Decide; the run is Uncertain (or Cancelled, not Retry); the
// call is Uncertain; the decision saw the current revision and the call's
// payload hash.
func Resolve(s Status, env *Env, d DecisionCmd, now time.Time) (Status, exagentv1.Receipt, error) {
	dec, replay, err := prepare(&s, env, d, exagentv1.DecisionResolve, now)
	if replay != nil || err != nil {
		return s, receiptOf(replay), err
	}
	cancelled := s.Phase == exagentv1.PhaseCancelled
	switch {
	case cancelled && d.Outcome == exagentv1.ResolveRetry:
		return s, exagentv1.Receipt{}, conflictf(
			"run is Cancelled: nothing runs again, so a call cannot be retried; resolve it Succeeded or Failed to record what happened")
	case s.Phase != exagentv1.PhaseUncertain && !cancelled:
		return s, exagentv1.Receipt{}, notPendingf("run is %s: nothing to resolve", phaseName(s.Phase))
	}
	i := findCall(&s, d.CallID)
	if i < 0 || s.Calls[i].State != exagentv1.CallUncertain {
		return s, exagentv1.Receipt{}, notPendingf("run has no Uncertain call %q", d.CallID)
	}
	if d.Revision != s.Revision {
		return s, exagentv1.Receipt{}, conflictf("the decision saw revision %d; the run is at %d", d.Revision, s.Revision)
	}
	if d.PayloadHash != s.Calls[i].PayloadHash {
		return s, exagentv1.Receipt{}, conflictf("the decision's payloadHash %s is not the call's %s",
			canonical.Short(d.PayloadHash), canonical.Short(s.Calls[i].PayloadHash))
	}
	st := clone(s)
	c := &st.Calls[i]
	who := actorString(&dec.cmd.Actor)
	switch d.Outcome {
	case exagentv1.ResolveSucceeded, exagentv1.ResolveFailed:
		ok := d.Outcome == exagentv1.ResolveSucceeded
		c.State = exagentv1.CallFailed
		if ok {
			c.State = exagentv1.CallSucceeded
		}
		c.Outcome = &exagentv1.CallOutcome{
			Succeeded:  ok,
			Result:     bound(fmt.Sprintf("Outcome confirmed by %s as %s: %s", who, strings.ToLower(string(d.Outcome)), d.Evidence), maxContent),
			ResolvedBy: truncateUTF8(dec.cmd.Actor.Username, exagentv1.MaxUsernameLength),
			Evidence:   bound(d.Evidence, maxMessage),
			At:         microTimePtr(now),
		}
	case exagentv1.ResolveRetry:
		c.State = exagentv1.CallApproved
		c.Outcome = nil
	default:
		return s, exagentv1.Receipt{}, conflictf("resolve outcome %q is not Succeeded, Failed or Retry", d.Outcome)
	}
	switch {
	case cancelled:
		// The phase and reason stay: the record is what changes.
		msg := fmt.Sprintf("cancelled; call %s recorded %s by %s (nothing runs again)", c.ID, d.Outcome, who)
		if anyCall(&st, isUncertain) {
			msg += cancelledUncertainNote
		}
		st.Message = bound(msg, maxMessage)
	case anyCall(&st, isUncertain):
		st.Message = bound(fmt.Sprintf("call %s resolved %s by %s; other calls are still uncertain", c.ID, d.Outcome, who), maxMessage)
	default:
		setPhase(&st, exagentv1.PhaseApproved, exagentv1.ReasonResolved,
			fmt.Sprintf("call %s resolved %s by %s; waiting for a worker", c.ID, d.Outcome, who))
	}
	return commitDecision(s, st, env, dec)
}
