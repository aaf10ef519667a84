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

// Replace ends a run that a newer run of its schedule replaces
// (concurrencyPolicy Replace), as a cancel does: the claim is revoked (its
// owner commits nothing more and dispatches nothing new), a call in flight
// is recorded Uncertain — its effect may still happen, and it is never
// repeated — and pending approvals are Cancelled. by is the replacing run,
// schedule its schedule.
//
// Touches: phase Cancelled, reason Replaced, message, claim, ledger
// active time, calls in flight, approvals, pendingApprovals.
// Guard: the run has not ended.
func Replace(s Status, env *Env, by, schedule string, now time.Time) (Status, error) {
	return supersede(s, env, exagentv1.ReasonReplaced, "run", "replace",
		fmt.Sprintf("replaced by run %s of schedule %s (its concurrencyPolicy is Replace)", by, schedule), now)
}
