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

package v1beta1

import (
	"fmt"
	"slices"
	"strings"
)

// Small read-only accessors over a run's journal, shared by the admission
// webhook and the kubectl plugin. The engine (loop/) keeps its own
// index-based helpers because it mutates entries in place.

// Call returns the journal entry of call id, or nil.
func (s *AgentRunStatus) Call(id string) *ToolCall {
	for i := range s.Calls {
		if s.Calls[i].ID == id {
			return &s.Calls[i]
		}
	}
	return nil
}

// Approval returns approval id, or nil.
func (s *AgentRunStatus) Approval(id string) *Approval {
	for i := range s.Approvals {
		if s.Approvals[i].ID == id {
			return &s.Approvals[i]
		}
	}
	return nil
}

// Pending returns the approvals waiting for a decision, in request order.
func (s *AgentRunStatus) Pending() []Approval {
	var out []Approval
	for _, a := range s.Approvals {
		if a.State == ApprovalPending {
			out = append(out, a)
		}
	}
	return out
}

// UncertainCalls returns the calls waiting for a Resolve, in journal order.
func (s *AgentRunStatus) UncertainCalls() []ToolCall {
	var out []ToolCall
	for _, c := range s.Calls {
		if c.State == CallUncertain {
			out = append(out, c)
		}
	}
	return out
}

// CurrentPayloadHash is the payload hash a decision on the approval must
// carry now: the edited call's once an approver edited it (edit), else the
// model's (payloadHash).
func (a *Approval) CurrentPayloadHash() string {
	if a.Edit != nil {
		return a.Edit.PayloadHash
	}
	return a.PayloadHash
}

// CountedVotes are the votes on the version of the call that will run
// (CurrentPayloadHash): a vote on another version never counts toward the
// quorum, so no yes is carried over to arguments its voter did not see.
// A vote journaled before votes carried their version reads as the rule
// of that time made it: on the model's version before the editor's vote,
// on the edited one from the editor's vote on.
func (a *Approval) CountedVotes() []Vote {
	cur := a.CurrentPayloadHash()
	out := make([]Vote, 0, len(a.Votes))
	edited := false
	for i := range a.Votes {
		v := &a.Votes[i]
		if a.Edit != nil && v.Actor.Username == a.Edit.Editor.Username && v.Actor.UID == a.Edit.Editor.UID {
			edited = true
		}
		seen := v.PayloadHash
		if seen == "" {
			seen = a.PayloadHash
			if edited {
				seen = a.Edit.PayloadHash
			}
		}
		if seen == cur {
			out = append(out, *v)
		}
	}
	return out
}

// QuorumMissing says what the approval's quorum still needs, in the words
// `kubectl approve show` prints ("needs 1 more approval", "needs 1 more
// from group security"); "" when it has no quorum or the votes meet it.
// One person counts once in the total and in every group they belong to;
// only votes on the version of the call that will run count.
func (a *Approval) QuorumMissing() string {
	q := a.Quorum
	if q == nil {
		return ""
	}
	votes := a.CountedVotes()
	var missing []string
	if n := int(q.Needed()) - len(votes); n > 0 {
		word := "approvals"
		if n == 1 {
			word = "approval"
		}
		missing = append(missing, fmt.Sprintf("%d more %s", n, word))
	}
	for _, g := range q.Groups {
		if n := int(g.Count) - votesFrom(votes, g.Group); n > 0 {
			missing = append(missing, fmt.Sprintf("%d more from group %s", n, g.Group))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "needs " + strings.Join(missing, " and ")
}

func votesFrom(votes []Vote, group string) int {
	n := 0
	for i := range votes {
		if slices.Contains(votes[i].Actor.Groups, group) {
			n++
		}
	}
	return n
}

// IsQuestion reports whether the request asks for an answer (kind
// Question), not a yes or no.
func (a *Approval) IsQuestion() bool { return a.Kind == KindQuestion && a.Question != nil }

// URLOrigin is scheme://host of an absolute http(s) URL without spaces or
// control characters, else "": what a person is told before they visit a
// URL a server gave (the manager never fetches it).
func URLOrigin(u string) string {
	rest, scheme := "", ""
	switch {
	case strings.HasPrefix(u, "https://"):
		scheme, rest = "https", u[len("https://"):]
	case strings.HasPrefix(u, "http://"):
		scheme, rest = "http", u[len("http://"):]
	default:
		return ""
	}
	if strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return ""
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:] // userinfo is never part of the origin
	}
	if host == "" {
		return ""
	}
	return scheme + "://" + host
}

// TreePath is run's chain of runs from its delegation tree's root down to
// run itself, read through byName (runs by name); it stops at a parent not
// in byName, and at the deepest delegation there can be.
func (run *AgentRun) TreePath(byName map[string]*AgentRun) []string {
	path := []string{run.Name}
	cur := run
	for i := 0; cur.Spec.Delegation != nil && i < MaxDelegationDepth; i++ {
		parent := cur.Spec.Delegation.Parent.Name
		path = append([]string{parent}, path...)
		next, ok := byName[parent]
		if !ok {
			break
		}
		cur = next
	}
	return path
}
