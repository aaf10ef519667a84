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

// Pause stops the run for the human decisions its batch needs. It runs
// only once every admitted sibling has a confirmed outcome, so no process
// holds IO while the run waits (the claim is released, the unused active
// time refunded: human waiting is never charged).
//
// Touches: revision (+1), approvals (+one per Pending call, binding the
// call's payload hash and the new revision, expiring after approvalTimeout
// unless Never), pendingApprovals, phase AwaitingApproval, reason, message,
// claim (nil), ledger active time.
// Guards: the fence; the cursor is at a batch with Pending calls; no effect
// is unresolved (in flight or Uncertain: Uncertain beats paused); the state
// plus the room reserved for each decision and receipt fits the budget.
func Pause(s Status, env *Env, f Fence, now time.Time) (Status, error) {
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	st := clone(s)
	if _, err := pause(&st, env, now); err != nil {
		return s, err
	}
	return st, nil
}

func pause(st *Status, env *Env, now time.Time) ([]exagentv1.Approval, error) {
	if st.Cursor.Stage != exagentv1.StageBatch {
		return nil, notPendingf("nothing to pause for: the cursor is at %s", st.Cursor.Stage)
	}
	if anyCall(st, inFlight) || anyCall(st, isUncertain) {
		return nil, errorf(KindUncertain, exagentv1.ReasonOutcomeUncertain,
			"cannot pause with an effect in flight or uncertain")
	}
	var pending []int
	for _, i := range stepCalls(st) {
		if st.Calls[i].State == exagentv1.CallPending {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return nil, notPendingf("no call of step %d needs a decision", st.Cursor.Step)
	}
	st.Revision++
	timeout, never := env.ApprovalTimeout()
	var created []exagentv1.Approval
	var names []string
	for _, i := range pending {
		c := &st.Calls[i]
		if awaitsInput(c) { // an MCP server's questions (mcpinput.go)
			for _, q := range inputQuestions(c, env, st.Revision, now) {
				if !never {
					q.ExpiresAt = secTimePtr(now.Add(timeout))
				}
				st.Approvals = append(st.Approvals, q)
				created = append(created, q)
				names = append(names, fmt.Sprintf("%s (%s)", c.Tool, q.ID))
			}
			continue
		}
		a := exagentv1.Approval{
			ID:          approvalID(c.ID, st.Revision),
			CallID:      c.ID,
			PayloadHash: c.PayloadHash,
			Revision:    st.Revision,
			State:       exagentv1.ApprovalPending,
			Rule:        c.Rule,
			RequestedAt: secTime(now),
			Quorum:      env.quorumOf(c.Rule),
		}
		env.askOf(&a, c) // question.go
		if !never {
			a.ExpiresAt = secTimePtr(now.Add(timeout))
		}
		st.Approvals = append(st.Approvals, a)
		created = append(created, a)
		names = append(names, fmt.Sprintf("%s (%s)", c.Tool, a.ID))
	}
	countPending(st)
	releaseClaim(st, env, now)
	setPhase(st, exagentv1.PhaseAwaitingApproval, exagentv1.ReasonPending,
		fmt.Sprintf("waiting for %s: %s", waitingFor(created), strings.Join(names, ", ")))
	if err := checkSize(st, env, decisionReserve*len(created), "pause"); err != nil {
		return nil, err
	}
	return created, nil
}

// approvalID names the approval of a call at a revision; it is what a
// person types (`kubectl approve <run> <id>`), hence short and stable.
func approvalID(callID string, revision int64) string {
	id := fmt.Sprintf("%s-r%d", callID, revision)
	if len(id) <= maxID {
		return id
	}
	return fmt.Sprintf("%s-r%d", canonical.Hash([]byte(callID))[len("sha256:"):len("sha256:")+16], revision)
}

// waitingFor says what the requests ask for: "2 approval(s)", "1
// answer(s)", "1 approval(s) and 1 answer(s)".
func waitingFor(reqs []exagentv1.Approval) string {
	questions := 0
	for i := range reqs {
		if reqs[i].IsQuestion() {
			questions++
		}
	}
	switch approvals := len(reqs) - questions; {
	case questions == 0:
		return fmt.Sprintf("%d approval(s)", approvals)
	case approvals == 0:
		return fmt.Sprintf("%d answer(s)", questions)
	default:
		return fmt.Sprintf("%d approval(s) and %d answer(s)", approvals, questions)
	}
}
