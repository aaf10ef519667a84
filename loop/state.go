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
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// clone deep-copies the state so a transition never mutates its input.
func clone(s Status) Status { return *s.DeepCopy() }

// Stored times are truncated to what their JSON form keeps (metav1.Time:
// seconds, MicroTime: microseconds) and put in UTC, so a decode/encode
// cycle gives back an equal state.
func secTime(now time.Time) metav1.Time {
	return metav1.NewTime(now.UTC().Truncate(time.Second))
}

func secTimePtr(now time.Time) *metav1.Time {
	t := secTime(now)
	return &t
}

func microTime(now time.Time) metav1.MicroTime {
	return metav1.NewMicroTime(now.UTC().Truncate(time.Microsecond))
}

func microTimePtr(now time.Time) *metav1.MicroTime {
	t := microTime(now)
	return &t
}

// checkFence is the guard of every owner transition: the caller's fence is
// the stored claim, the run is Running and the lease has not expired.
func checkFence(s *Status, f Fence, now time.Time) error {
	if err := CheckOwner(s, f); err != nil {
		return err
	}
	if c := s.Claim; !now.Before(c.LeaseExpiresAt.Time) {
		return staleFencef("lease of attempt %d expired at %s", c.Attempt, c.LeaseExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

func phaseName(p exagentv1.RunPhase) string {
	if p == "" {
		return "not started"
	}
	return string(p)
}

// findCall returns the index of call id, or -1.
func findCall(s *Status, id string) int {
	for i := range s.Calls {
		if s.Calls[i].ID == id {
			return i
		}
	}
	return -1
}

// findApproval returns the index of approval id, or -1.
func findApproval(s *Status, id string) int {
	for i := range s.Approvals {
		if s.Approvals[i].ID == id {
			return i
		}
	}
	return -1
}

// stepCalls returns the indexes of the calls of the cursor's step, in the
// model's order.
func stepCalls(s *Status) []int {
	var out []int
	for i := range s.Calls {
		if s.Calls[i].Step == s.Cursor.Step {
			out = append(out, i)
		}
	}
	return out
}

// inFlight reports whether a call's intent is committed and its outcome is
// not, with IO outstanding: a delegation call whose child exists waits for
// the child instead (delegated), a waiting call for its time (waiting).
func inFlight(c *exagentv1.ToolCall) bool {
	return c.State == exagentv1.CallStarted && c.Child == "" && c.Wait == nil
}

// anyCall reports whether some call satisfies pred.
func anyCall(s *Status, pred func(*exagentv1.ToolCall) bool) bool {
	for i := range s.Calls {
		if pred(&s.Calls[i]) {
			return true
		}
	}
	return false
}

func isUncertain(c *exagentv1.ToolCall) bool { return c.State == exagentv1.CallUncertain }

// countPending recomputes status.pendingApprovals.
func countPending(s *Status) {
	n := int32(0)
	for i := range s.Approvals {
		if s.Approvals[i].State == exagentv1.ApprovalPending {
			n++
		}
	}
	s.PendingApprovals = n
}

// setPhase changes the phase with its reason and message.
func setPhase(s *Status, p exagentv1.RunPhase, reason, message string) {
	s.Phase = p
	s.Reason = reason
	s.Message = truncateUTF8(message, maxMessage)
}

// encodedSize is the size of the status as the apiserver stores it.
func encodedSize(s *Status) int {
	b, err := json.Marshal(s)
	if err != nil {
		return 1 << 30 // unencodable: never fits
	}
	return len(b)
}

// hotSize is the size the status will have once Seal moved its large
// values into segments (each leaves a ref of about refBytes): what the
// budget is measured against. valueBytes is the threshold Seal is
// configured with (EnvInput.ValueBytes, the manager's --seal-value-bytes):
// with another one the engine would count as refs values that stay
// inline, or the other way round.
func hotSize(s *Status, valueBytes int) int {
	size := encodedSize(s)
	limit := valueLimit(valueBytes)
	sl := &sealer{st: s}
	sl.eachValue(func(v *string, _ **exagentv1.ValueRef, _ bool) {
		if sealable(*v, limit) {
			size -= escapedLen(*v) - refBytes
		}
	})
	return size
}

// refBytes is about what a ValueRef costs in the encoded status.
const refBytes = 200

// checkSize refuses a state that, with reserve bytes of headroom for what
// the next commits will add, would not fit the budget. Refusing before the
// IO is what keeps a later, unavoidable commit (an outcome, a decision)
// from failing against etcd's object limit.
func checkSize(s *Status, env *Env, reserve int, what string) error {
	size := hotSize(s, env.in.ValueBytes)
	if size+reserve > env.budget {
		return errorf(KindTooLarge, exagentv1.ReasonStatusTooLarge,
			"%s: status would take %d bytes plus %d reserved, over the budget of %d", what, size, reserve, env.budget)
	}
	return nil
}
