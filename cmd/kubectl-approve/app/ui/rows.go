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

package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/clip"
)

// maxShownArgs bounds the arguments an inbox row shows: enough to read
// the call; the run page shows it whole.
const maxShownArgs = 4 << 10

// inboxRow is one approval waiting for a person.
type inboxRow struct {
	// Key identifies the row in the page and in the event stream.
	Key       string
	Namespace string
	Run       string
	Agent     string
	Root      string // the root run of a delegated (child) run
	// Conversation is the conversation a turn belongs to (its later
	// turns wait for this request too), Turn the turn's place in it.
	Conversation string
	Turn         int32
	ApprovalID   string
	CallID       string
	Tool         string
	Args         string
	EditedBy     string
	Rule         string
	Deciders     string
	Requested    time.Time
	Expires      *time.Time
	// Quorum, Votes and Needs describe a quorum approval ("2 approvals, 1
	// from group security"; who voted; what is still missing).
	Quorum string
	Votes  []string
	Needed int32
	Needs  string
	// Question is what a question asks (kind Question), nil for an
	// approval: the "what is asked" template shows one or the other.
	Question *questionView
	// Schema is the tool's parameters schema from the current Agent
	// (what the arguments are checked against), when the person may
	// read the Agent.
	Schema string
	// RunUID, Revision and PayloadHash are what a decision on this row
	// binds (the run page's forms carry them; Seen).
	RunUID      string
	Revision    int64
	PayloadHash string
}

// questionView is a question waiting for an answer.
type questionView struct {
	Text    string
	Choices []string
	Schema  string
	// Object tells whether the schema wants an object (the answer field
	// is then JSON by default).
	Object bool
	// URL is where a URL question (an MCP elicitation in URL mode) sends
	// the person, and Origin its scheme://host[:port] ("" when it is not
	// an http(s) URL: it is then shown as text, never as a link).
	URL, Origin string
}

// VotesLine is "n of m" for a quorum row.
func (r inboxRow) VotesLine() string {
	return fmt.Sprintf("%d of %d", len(r.Votes), r.Needed)
}

// runKey names a run in the event stream.
func runKey(ns, name string) string { return ns + "/" + name }

// rowsOf returns the approvals run waits for, with who may decide read
// from agent (nil when the person may not read it or it is gone).
func rowsOf(run *exagentv1.AgentRun, agent *exagentv1.Agent) []inboxRow {
	if run.Status.Phase != exagentv1.PhaseAwaitingApproval {
		return nil
	}
	var out []inboxRow
	for _, a := range run.Status.Pending() {
		row := inboxRow{
			Key:        runKey(run.Namespace, run.Name) + "/" + a.ID,
			Namespace:  run.Namespace,
			Run:        run.Name,
			Agent:      run.Spec.AgentRef.Name,
			ApprovalID: a.ID,
			CallID:     a.CallID,
			Rule:       ruleOf(a.Rule),
			Deciders:   deciders(run, agent, exagentv1.VerbApprove),
			Requested:  a.RequestedAt.UTC(),
			RunUID:     string(run.UID),
			Revision:   a.Revision,
			// The version a vote is on: the edited call's once edited.
			PayloadHash: a.CurrentPayloadHash(),
		}
		if d := run.Spec.Delegation; d != nil {
			row.Root = d.Root.Name
		}
		if ref := run.Spec.ConversationRef; ref != nil {
			row.Conversation = ref.Name
			if run.Status.Turn != nil {
				row.Turn = run.Status.Turn.Index
			}
		}
		if a.ExpiresAt != nil {
			t := a.ExpiresAt.UTC()
			row.Expires = &t
		}
		if c := run.Status.Call(a.CallID); c != nil {
			row.Tool = c.Tool
			row.Schema = toolSchema(agent, c.Tool)
			row.Args = shownJSON(c.Args, maxShownArgs)
			if c.Args == "" && c.ArgsRef != nil {
				row.Args = fmt.Sprintf("(%d bytes, sealed: open the run)", c.ArgsRef.Bytes)
			}
		}
		if ed := a.Edit; ed != nil && ed.Args != "" {
			row.Args, row.EditedBy = shownJSON(ed.Args, maxShownArgs), ed.Editor.Username
		}
		if a.IsQuestion() {
			q := a.Question
			row.Question = &questionView{Text: q.Text, Choices: q.Choices, Schema: shownJSON(q.Schema, maxShownArgs),
				Object: schemaType(q.Schema) == "object", URL: q.URL, Origin: exagentv1.URLOrigin(q.URL)}
			row.PayloadHash = a.PayloadHash
			row.Deciders = deciders(run, agent, exagentv1.VerbAnswer)
		}
		if q := a.Quorum; q != nil {
			row.Quorum, row.Needed, row.Needs = quorumLine(q), q.Needed(), a.QuorumMissing()
			for _, v := range a.Votes {
				row.Votes = append(row.Votes, v.Actor.Username)
			}
		}
		out = append(out, row)
	}
	return out
}

// sortRows orders rows by namespace, run and request time.
func sortRows(rows []inboxRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if !a.Requested.Equal(b.Requested) {
			return a.Requested.Before(b.Requested)
		}
		return a.ApprovalID < b.ApprovalID
	})
}

// deciders says who may decide the run's approvals: the RBAC verb, then
// the Agent's approvers (docs/architecture.md §2).
func deciders(run *exagentv1.AgentRun, agent *exagentv1.Agent, verb string) string {
	line := fmt.Sprintf("verb %s on agents/approval %q in %s", verb, run.Spec.AgentRef.Name, run.Namespace)
	if agent == nil {
		return line
	}
	var who []string
	if ap := agent.Spec.Policy.Approvers; ap != nil {
		for _, u := range ap.Users {
			who = append(who, "user "+u)
		}
		for _, g := range ap.Groups {
			who = append(who, "group "+g)
		}
		for _, sa := range ap.ServiceAccounts {
			who = append(who, "serviceaccount "+sa)
		}
	}
	if len(who) > 0 {
		line += ", and one of: " + strings.Join(who, ", ")
	}
	if agent.Spec.Policy.ForbidSelfApproval {
		requester := ""
		if rb := run.Spec.RequestedBy; rb != nil {
			requester = " (" + rb.Username + ")"
		}
		line += "; not the run's requester" + requester
	}
	return line
}

func quorumLine(q *exagentv1.Quorum) string {
	parts := []string{fmt.Sprintf("%d %s", q.Needed(), plural(int(q.Needed()), "approval", "approvals"))}
	for _, g := range q.Groups {
		parts = append(parts, fmt.Sprintf("%d from group %s", g.Count, g.Group))
	}
	return strings.Join(parts, ", ")
}

func ruleOf(r string) string {
	if r == "" {
		return "the policy default"
	}
	return "rule " + r
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// shownJSON is s indented when it is JSON, bounded to n bytes either way;
// a cut says how much there is (the run page shows a pending call whole). It is text:
// templates escape it.
func shownJSON(s string, n int) string {
	s = indentedJSON(s)
	if len(s) <= n {
		return s
	}
	return clip.Bytes(s, n, clip.Ellipsis) + fmt.Sprintf("\n(%d bytes; the first %d KiB are shown)", len(s), n>>10)
}

// indentedJSON is s indented when it is JSON, whole: what a decision is
// about is never cut.
func indentedJSON(s string) string {
	var b bytes.Buffer
	if json.Valid([]byte(s)) && json.Indent(&b, []byte(s), "", "  ") == nil {
		return b.String()
	}
	return s
}

// schemaType is the top-level "type" of a JSON Schema ("" when it names
// none or several).
func schemaType(schema string) string {
	var s struct {
		Type any `json:"type"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil {
		return ""
	}
	t, _ := s.Type.(string)
	return t
}

// toolSchema is the parameters schema of tool in agent, indented ("" when
// unknown).
func toolSchema(agent *exagentv1.Agent, tool string) string {
	if agent == nil {
		return ""
	}
	for _, t := range agent.Spec.Tools {
		if t.Name == tool && t.Parameters != nil {
			return shownJSON(string(t.Parameters.Raw), maxShownArgs)
		}
	}
	return ""
}
