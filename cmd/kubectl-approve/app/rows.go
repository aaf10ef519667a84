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

package app

import (
	"encoding/json"
	"sort"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// pendingApproval is one approval a run is waiting for, joined with its tool
// call: what `list` prints and what `-o json|yaml` emits, one item per
// approval, with everything a script needs to decide (run, approval id,
// payload hash, revision).
type pendingApproval struct {
	Namespace   string          `json:"namespace"`
	Run         string          `json:"run"`
	Agent       string          `json:"agent"`
	Approval    string          `json:"approval"`
	CallID      string          `json:"callID"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args,omitempty"`
	PayloadHash string          `json:"payloadHash"`
	Revision    int64           `json:"revision"`
	Rule        string          `json:"rule,omitempty"`
	// EditedBy names who edited the call under a quorum (Args are then the
	// edited arguments every vote is on).
	EditedBy string `json:"editedBy,omitempty"`
	// Votes and Needs describe a quorum: the votes so far and what is
	// still missing ("needs 1 more from group security").
	Votes  []string `json:"votes,omitempty"`
	Needs  string   `json:"needs,omitempty"`
	Quorum string   `json:"quorum,omitempty"`
	// Conversation names the conversation a turn's approval holds up
	// (the run is its open turn), Turn the turn's place in it.
	Conversation string `json:"conversation,omitempty"`
	Turn         int32  `json:"turn,omitempty"`
	// Root and Path place a child run's approval in its tree (tree.go).
	Root        string     `json:"root,omitempty"`
	Path        string     `json:"path,omitempty"`
	RequestedAt time.Time  `json:"requestedAt"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	// Kind is Question for a request that waits for an answer; Question,
	// Choices and AnswerSchema are what it asks.
	Kind         string          `json:"kind,omitempty"`
	Question     string          `json:"question,omitempty"`
	Choices      []string        `json:"choices,omitempty"`
	AnswerSchema json.RawMessage `json:"answerSchema,omitempty"`
}

// pendingList is the -o json|yaml document of `list`.
type pendingList struct {
	Items []pendingApproval `json:"items"`
	// HeldByBudget are the runs AgentBudgets hold (list_held.go).
	HeldByBudget []heldRun `json:"heldByBudget,omitempty"`
	// Waiting are the waiting calls of the runs that wait on the world
	// (list_waiting.go).
	Waiting []waitingRun `json:"waiting,omitempty"`
}

// pendingApprovals returns the Pending approvals of runs, ordered by
// namespace, run and request time.
func pendingApprovals(runs []exagentv1.AgentRun) []pendingApproval {
	var out []pendingApproval
	for i := range runs {
		run := &runs[i]
		for _, a := range run.Status.Approvals {
			if a.State != exagentv1.ApprovalPending {
				continue
			}
			out = append(out, newPendingApproval(run, a))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if !a.RequestedAt.Equal(b.RequestedAt) {
			return a.RequestedAt.Before(b.RequestedAt)
		}
		return a.Approval < b.Approval
	})
	return out
}

func newPendingApproval(run *exagentv1.AgentRun, a exagentv1.Approval) pendingApproval {
	p := pendingApproval{
		Namespace:   run.Namespace,
		Run:         run.Name,
		Agent:       run.Spec.AgentRef.Name,
		Approval:    a.ID,
		CallID:      a.CallID,
		PayloadHash: a.CurrentPayloadHash(),
		Revision:    a.Revision,
		Rule:        a.Rule,
		RequestedAt: a.RequestedAt.UTC(),
	}
	if a.ExpiresAt != nil {
		t := a.ExpiresAt.UTC()
		p.ExpiresAt = &t
	}
	if ref := run.Spec.ConversationRef; ref != nil {
		p.Conversation = ref.Name
		if run.Status.Turn != nil {
			p.Turn = run.Status.Turn.Index
		}
	}
	if call := run.Status.Call(a.CallID); call != nil {
		p.Tool = call.Tool
		if call.Args != "" && json.Valid([]byte(call.Args)) {
			p.Args = json.RawMessage(call.Args)
		}
	}
	if ed := a.Edit; ed != nil && ed.Args != "" && json.Valid([]byte(ed.Args)) {
		p.Args, p.EditedBy = json.RawMessage(ed.Args), ed.Editor.Username
	}
	if a.IsQuestion() {
		p.Kind, p.Question, p.Choices = string(exagentv1.KindQuestion), a.Question.Text, a.Question.Choices
		if json.Valid([]byte(a.Question.Schema)) {
			p.AnswerSchema = json.RawMessage(a.Question.Schema)
		}
	}
	if a.Quorum != nil {
		p.Quorum, p.Needs = quorumLine(a.Quorum), a.QuorumMissing()
		for _, v := range a.Votes {
			p.Votes = append(p.Votes, v.Actor.Username)
		}
	}
	return p
}
