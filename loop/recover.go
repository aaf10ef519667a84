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

// Recover takes back a Running run whose owner's lease expired (the owner
// is presumed dead; if it is not, its fence is now stale and it can
// neither dispatch nor confirm). The owner's whole active-time reservation
// is charged: no checkpoint measured it, and a crash must never buy free
// time. A tool intent without an outcome becomes Uncertain — the effect
// may have happened — and the run waits for a Resolve; the one exception is
// a call to an http or mcp tool the Agent marks idempotent, re-sent with the same
// idempotency key at most maxResends times. A lost model request has no
// side effect: its intent stays and the next Step re-sends it, charged again.
//
// Touches: claim (nil), ledger active time, calls in flight (Uncertain, or
// back to Allowed/Approved with resends+1), revision (+1 when Uncertain),
// phase (Uncertain, or Queued/Approved), reason, message.
// Guards: the run is Running and its lease has expired.
func Recover(s Status, env *Env, now time.Time) (Status, error) {
	env = env.forRun(&s)
	if s.Phase != exagentv1.PhaseRunning {
		return s, notPendingf("run is %s: nothing to recover", phaseName(s.Phase))
	}
	if AwaitingChildren(s) {
		return s, notPendingf("run waits for its child runs: nobody owns it, nothing to recover")
	}
	if s.Claim != nil && now.Before(s.Claim.LeaseExpiresAt.Time) {
		return s, conflictf("the lease of %s (attempt %d) is valid until %s",
			s.Claim.Holder, s.Claim.Attempt, s.Claim.LeaseExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	st := clone(s)
	holder, attempt := "", int64(0)
	if st.Claim != nil {
		holder, attempt = st.Claim.Holder, st.Claim.Attempt
	}
	_, never := env.ActiveTimeLimit()
	settleLost(&st, never, now)
	st.Claim = nil
	for i := range st.Calls {
		c := &st.Calls[i]
		if !inFlight(c) {
			continue
		}
		if env.isDelegation(c.Tool) || findChild(&st, c.ID) >= 0 {
			// Begun again: creating the child again finds the same one (a
			// call whose child is journaled is a delegation even if its
			// tool was removed since: then its child is withdrawn).
			loseIntent(&st, env, c)
			continue
		}
		if env.toolIdempotent(c.Tool) && c.Resends < maxResends {
			c.Resends++
			c.State = exagentv1.CallAllowed
			if approvalCovers(&st, c.ID, c.PayloadHash) {
				c.State = exagentv1.CallApproved
			}
			continue
		}
		c.State = exagentv1.CallUncertain
	}
	lost := fmt.Sprintf("the lease of %s (attempt %d) expired", holder, attempt)
	if anyCall(&st, isUncertain) {
		goUncertain(&st, env, now)
		st.Message = bound(lost+"; "+st.Message, maxMessage)
		return st, nil
	}
	setPhase(&st, resumePhase(&st), exagentv1.ReasonRecovered, lost+"; waiting for a worker")
	return st, nil
}
