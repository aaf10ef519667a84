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
	"fmt"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// callProvenance says what let a call run or stopped it, from the journal
// (docs/architecture.md §13): "allowed by rule X", "asked by rule Y:
// approved by …", "… edited by …", "approved for the run by …", "refused
// by rule Z", with the policy fingerprint it was decided under. "" for a
// call the policy has not decided (proposed, or failed before policy:
// unknown tool, invalid arguments).
func callProvenance(c *exagentv1.ToolCall, approvals []exagentv1.Approval, grants []exagentv1.RunGrant) string {
	if c.Policy == "" && c.Rule == "" && c.Grant == "" && !hasApproval(c.ID, approvals) {
		return ""
	}
	rule := "rule " + c.Rule
	if c.Rule == "" {
		rule = "the policy default"
	}
	var what string
	switch a := lastApproval(c.ID, approvals); {
	case c.State == exagentv1.CallRefused && a != nil && a.State == exagentv1.ApprovalExpired:
		what = fmt.Sprintf("asked by %s: nobody decided in time (approval %s expired)", ruleOf(a.Rule), a.ID)
	case c.State == exagentv1.CallRefused:
		what = "refused by " + rule
	case c.Grant != "":
		what = fmt.Sprintf("asked by %s: approved for the run", rule)
		if g := grantNamed(c.Grant, c.Tool, grants); g != nil {
			what += " by " + actorNames(g.Actors)
		}
		what += fmt.Sprintf(" (decision %s)", c.Grant)
	case a == nil && c.State == exagentv1.CallPending:
		what = "asked by " + rule
	case a == nil:
		what = "allowed by " + rule
	default:
		what = fmt.Sprintf("asked by %s: %s", ruleOf(a.Rule), approvalOutcome(a))
	}
	if c.Edit != nil {
		what += "; arguments edited by " + c.Edit.Editor.Username
	}
	if c.Policy != "" {
		what += " (policy " + shortHash(c.Policy) + ")"
	}
	return what
}

// approvalOutcome is what became of an approval, in a few words.
func approvalOutcome(a *exagentv1.Approval) string {
	if a.IsQuestion() {
		return questionOutcome(a)
	}
	switch a.State {
	case exagentv1.ApprovalPending:
		s := "waiting for a decision"
		if m := a.QuorumMissing(); m != "" {
			s += fmt.Sprintf(" (%d %s so far; %s)", len(a.Votes), pluralWord(len(a.Votes), "vote", "votes"), m)
		}
		return s
	case exagentv1.ApprovalApproved:
		s := "approved by " + approvalDeciders(a)
		if a.Scope == exagentv1.ScopeRun {
			s += " for the rest of the run"
		}
		return s
	case exagentv1.ApprovalExpired:
		return "nobody decided in time"
	}
	by := ""
	if a.Actor != nil {
		by = " by " + a.Actor.Username
	}
	return strings.ToLower(string(a.State)) + by
}

// approvalDeciders names who approved: every voter under a quorum.
func approvalDeciders(a *exagentv1.Approval) string {
	if len(a.Votes) > 0 {
		names := make([]exagentv1.Actor, len(a.Votes))
		for i := range a.Votes {
			names[i] = a.Votes[i].Actor
		}
		return actorNames(names)
	}
	if a.Actor == nil {
		return "<unknown>"
	}
	return a.Actor.Username
}

// votesLine lists a quorum's votes: "alice (sre), bob".
func votesLine(a *exagentv1.Approval) string {
	if len(a.Votes) == 0 {
		return "none yet"
	}
	parts := make([]string, len(a.Votes))
	for i, v := range a.Votes {
		parts[i] = v.Actor.Username
		if len(v.Actor.Groups) > 0 {
			parts[i] += " (" + strings.Join(v.Actor.Groups, ", ") + ")"
		}
		if v.Scope == exagentv1.ScopeRun {
			parts[i] += " for the run"
		}
	}
	return strings.Join(parts, "; ")
}

// quorumLine describes what a quorum needs: "2 approvals, 1 from group security".
func quorumLine(q *exagentv1.Quorum) string {
	parts := []string{fmt.Sprintf("%d %s", q.Needed(), pluralWord(int(q.Needed()), "approval", "approvals"))}
	for _, g := range q.Groups {
		parts = append(parts, fmt.Sprintf("%d from group %s", g.Count, g.Group))
	}
	return strings.Join(parts, ", ")
}

func actorNames(as []exagentv1.Actor) string {
	names := make([]string, len(as))
	for i := range as {
		names[i] = as[i].Username
	}
	return strings.Join(names, ", ")
}

func ruleOf(r string) string {
	if r == "" {
		return "the policy default"
	}
	return "rule " + r
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func hasApproval(callID string, approvals []exagentv1.Approval) bool {
	return lastApproval(callID, approvals) != nil
}

// lastApproval is the newest approval of a call (a call asked again after
// a change has one per round).
func lastApproval(callID string, approvals []exagentv1.Approval) *exagentv1.Approval {
	for i := len(approvals) - 1; i >= 0; i-- {
		if approvals[i].CallID == callID {
			return &approvals[i]
		}
	}
	return nil
}

func grantNamed(decision, tool string, grants []exagentv1.RunGrant) *exagentv1.RunGrant {
	for i := range grants {
		if grants[i].Decision == decision && grants[i].Tool == tool {
			return &grants[i]
		}
	}
	return nil
}

// questionOutcome is what became of a question: "question q1-r1 answered
// by alice", "… declined by bob", "… waiting for an answer".
func questionOutcome(a *exagentv1.Approval) string {
	what := "question " + a.ID
	switch a.Question.Source {
	case exagentv1.QuestionAskHuman:
	case exagentv1.QuestionParticipant:
		what = "the participant's turn " + a.ID
	default:
		what = "the MCP server's question " + a.ID
	}
	switch a.State {
	case exagentv1.ApprovalPending:
		return what + " waiting for an answer"
	case exagentv1.ApprovalExpired:
		return what + ": nobody answered in time"
	case exagentv1.ApprovalAnswered:
		verb := map[exagentv1.AnswerAction]string{exagentv1.AnswerDecline: "declined", exagentv1.AnswerCancel: "dismissed"}[a.Question.Action]
		if verb == "" {
			verb = "answered"
		}
		by := ""
		if a.Actor != nil {
			by = " by " + a.Actor.Username
		}
		return what + " " + verb + by
	}
	return what + " " + strings.ToLower(string(a.State))
}
