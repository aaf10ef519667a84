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
	"github.com/exagent-io/exagent/internal/canonical"
)

// FailUnstorable ends a run whose next status the store refuses for good:
// the apiserver answers that it is invalid or too large, so retrying the
// same commit can only fail again (docs/architecture.md §4.6 says what a failed
// commit means; this is the one failure that is not transient). From s —
// the status last stored, which the store did accept — it journals what
// the fence's attempt learned that safety needs, and nothing that could be
// what the store refused:
//
//   - each tool result's outcome, Succeeded or Failed, with a short note
//     in place of its result (its size and sha256, and that it was not
//     kept): the effect is known to have happened, or not;
//   - Uncertain for a result whose outcome is unknown;
//
// then it ends the run Failed with reason and message. Calls still in
// flight become Uncertain (Fail): their effect may still happen. A model
// answer is dropped: it has no side effect.
//
// Touches: the results' calls (state, outcome), then what Fail touches.
// Guards: the run has not ended; a result counts only for a call Started
// by the fence's attempt (none without a fence).
func FailUnstorable(s Status, f *Fence, results []ToolResult, reason, message string, now time.Time) (Status, error) {
	if s.Phase.IsTerminal() {
		return s, conflictf("run already ended %s", s.Phase)
	}
	st := clone(s)
	for _, r := range results {
		if f == nil {
			break
		}
		i := findCall(&st, r.CallID)
		if i < 0 {
			continue
		}
		c := &st.Calls[i]
		if c.State != exagentv1.CallStarted || c.Attempt != f.Attempt || c.Child != "" || c.Wait != nil {
			continue
		}
		switch r.Kind {
		case ResultSucceeded, ResultFailed:
			c.State = exagentv1.CallFailed
			if r.Kind == ResultSucceeded {
				c.State = exagentv1.CallSucceeded
			}
			c.Outcome = &exagentv1.CallOutcome{Succeeded: r.Kind == ResultSucceeded, At: microTimePtr(now),
				Result: unstoredNote(r.Output, reason)}
		default:
			c.State = exagentv1.CallUncertain
		}
	}
	return Fail(st, reason, message, now)
}

// unstoredNote stands in for a result the store could not take.
func unstoredNote(out, reason string) string {
	return fmt.Sprintf("[result not stored (%s): %d bytes, sha256 %s]", reason, len(out), canonical.SHA256Hex(out))
}
