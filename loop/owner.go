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

// Extend is what every owner commit does to the claim (docs/architecture.md §8: a live
// owner keeps what it owns): the lease runs for a whole leaseDuration from
// now. It is the only renewal: it does not require the stored lease to
// be still valid: an owner that is alive, whose lease lapsed while its results
// waited in a queue, takes its own claim back. That is safe because the
// caller commits the extension by compare-and-swap on the version it read:
// if any other process recovered or claimed the run since, that version is
// gone and the commit fails with nothing done (§4.6). Recovery stays for
// dead owners.
//
// Touches: claim.leaseExpiresAt.
// Guards: the run is Running and claimed by the fence's holder and attempt.
func Extend(s Status, env *Env, f Fence, now time.Time) (Status, error) {
	if err := CheckOwner(&s, f); err != nil {
		return s, err
	}
	st := clone(s)
	st.Claim.LeaseExpiresAt = microTime(now.Add(env.lease))
	return st, nil
}

// CheckOwner is the fence without the lease: the run is Running and
// claimed by the fence's holder and attempt. Whether the lease lapsed does
// not matter here: the caller's compare-and-swap decides (Extend). The
// store checks it on the object it writes over, as every owner
// transition does on its input.
func CheckOwner(s *Status, f Fence) error {
	c := s.Claim
	switch {
	case s.Phase != exagentv1.PhaseRunning:
		return staleFencef("run is %s, not Running", phaseName(s.Phase))
	case c == nil:
		return staleFencef("run has no claim")
	case c.Holder != f.Holder || c.Attempt != f.Attempt:
		return staleFencef("claim is %s attempt %d, not %s attempt %d", c.Holder, c.Attempt, f.Holder, f.Attempt)
	}
	return nil
}

// NotStarted takes back an intent whose IO provably never began: the
// owner's executor refused to start the job because, when its turn came,
// the lease it was dispatched under had too little time left (docs/architecture.md
// §4.1: no IO on a claim known to be stale). The tool call goes back to
// Allowed (or Approved, when an approval covers its payload) with its
// idempotency key and its place in the ledger, so the next Step begins it
// again under a fresh lease; a model request's intent is dropped and its
// charge in ledger.requests refunded (nothing was sent), so the next Step
// sends it as the same request.
//
// Only the process that dispatched the job can know it never started, so
// only its own attempt's intents are taken back.
//
// Touches: the call's state and startedAt, or cursor.modelRequest and
// ledger.requests.
// Guards: the fence; the call is Started by this very attempt, or the
// outstanding model request is this attempt's.
func NotStarted(s Status, env *Env, f Fence, callID string, now time.Time) (Status, error) {
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	st := clone(s)
	if callID == "" {
		m := st.Cursor.ModelRequest
		if m == nil || m.Attempt != f.Attempt {
			return s, notPendingf("no model request of attempt %d is outstanding", f.Attempt)
		}
		st.Cursor.ModelRequest = nil
		if m.Request == st.Ledger.Requests && st.Ledger.Requests > 0 {
			st.Ledger.Requests--
		}
		return st, nil
	}
	i := findCall(&st, callID)
	if i < 0 {
		return s, notPendingf("no call %q", callID)
	}
	c := &st.Calls[i]
	if c.State != exagentv1.CallStarted || c.Attempt != f.Attempt {
		return s, notPendingf("call %q is %s (attempt %d), not Started by attempt %d", callID, c.State, c.Attempt, f.Attempt)
	}
	if c.Wait != nil {
		return s, notPendingf("call %q waits (%s): it sent nothing to take back", callID, c.Wait.Kind)
	}
	c.State = exagentv1.CallAllowed
	if approvalCovers(&st, c.ID, c.PayloadHash) {
		c.State = exagentv1.CallApproved
	}
	c.StartedAt = nil
	return st, nil
}

// RecordLateOutcome journals what a call in flight did after its run was
// cancelled (docs/architecture.md §4.4: the record is worth keeping; nothing runs
// again). Cancel leaves such a call Uncertain; when the attempt that began
// it answers, its outcome is recorded and the call is closed. An Unknown
// result leaves it Uncertain, for a Resolve "for the record".
//
// Touches: the call's state and outcome.
// Guards: the run is Cancelled; the call is Uncertain, has no outcome and
// was begun by the result's attempt.
func RecordLateOutcome(s Status, env *Env, attempt int64, r ToolResult, now time.Time) (Status, error) {
	if s.Phase != exagentv1.PhaseCancelled {
		return s, notPendingf("run is %s, not Cancelled", phaseName(s.Phase))
	}
	i := findCall(&s, r.CallID)
	if i < 0 {
		return s, notPendingf("no call %q", r.CallID)
	}
	if c := &s.Calls[i]; c.State != exagentv1.CallUncertain || c.Outcome != nil || c.Attempt != attempt {
		return s, notPendingf("call %q is %s (attempt %d): no late outcome of attempt %d expected", r.CallID, c.State, c.Attempt, attempt)
	}
	if r.Kind == ResultUnknown {
		return s, notPendingf("call %q: the late answer is unknown too", r.CallID)
	}
	st := clone(s)
	c := &st.Calls[i]
	c.State = exagentv1.CallFailed
	if r.Kind == ResultSucceeded {
		c.State = exagentv1.CallSucceeded
	}
	c.Outcome = &exagentv1.CallOutcome{Succeeded: r.Kind == ResultSucceeded, At: microTimePtr(now),
		Result: bound(r.Output, maxContent)}
	for hotSize(&st, env.in.ValueBytes) > env.budget && c.Outcome.Result != "" {
		c.Outcome.Result = bound(c.Outcome.Result, len(c.Outcome.Result)/2)
	}
	return st, nil
}
