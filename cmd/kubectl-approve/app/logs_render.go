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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// logEntry is one line of `logs`: key names the fact it reports (a
// transcript message, a call reaching a state, an approval requested or
// decided, the run's end), so a follower prints each fact once, when it
// first appears.
type logEntry struct {
	key, text string
}

const logWidth = 400

// logEntries renders the run's transcript and journal in the order things
// happened: each message; after the assistant's tool calls, each call's
// approval, decision and outcome; then the run's pause or end. j is the
// run's whole journal (journalOf: sealed and hot, values inline; nil for a
// run with nothing sealed). It is a pure function of the two, so a
// follower recomputes it at every change and prints the entries it has
// not printed yet: a message's key is its number in the logical
// transcript, which sealing does not change.
func logEntries(run *exagentv1.AgentRun, j *journal) []logEntry {
	st := &run.Status
	if j == nil {
		j = &journal{messages: st.History, calls: st.Calls, approvals: st.Approvals}
	}
	var out []logEntry
	add := func(key, format string, a ...any) {
		out = append(out, logEntry{key: key, text: truncate(oneLine(fmt.Sprintf(format, a...)), logWidth)})
	}
	shown := map[string]bool{}
	for i, m := range j.messages {
		switch {
		case m.Role == exagentv1.RoleAssistant && len(m.ToolCalls) > 0:
			if m.Content != "" {
				add(fmt.Sprintf("msg/%d", i), "[assistant] %s", m.Content)
			}
			for _, tc := range m.ToolCalls {
				add(fmt.Sprintf("msg/%d/%s", i, tc.ID), "[assistant] calls %s(%s) as %s", tc.Name, tc.Arguments, tc.ID)
				callEntries(run, j, tc.ID, add)
				shown[tc.ID] = true
			}
		case m.Role == exagentv1.RoleTool:
			add(fmt.Sprintf("msg/%d", i), "[tool %s] %s", m.ToolCallID, m.Content)
		default:
			add(fmt.Sprintf("msg/%d", i), "[%s] %s", m.Role, m.Content)
		}
	}
	// Calls of the current step whose assistant message is not in the
	// history yet, or sealed out of it.
	for _, c := range j.calls {
		if !shown[c.ID] {
			add("call/"+c.ID, "[assistant] calls %s(%s) as %s", c.Tool, c.Args, c.ID)
			callEntries(run, j, c.ID, add)
		}
	}
	switch p := st.Phase; {
	case p.IsTerminal():
		line := fmt.Sprintf("run ended %s", p)
		if st.Reason != "" && st.Reason != string(p) {
			line += " (" + st.Reason + ")"
		}
		if st.Message != "" {
			line += ": " + st.Message
		}
		add("end", "%s", line)
	case p == exagentv1.PhaseUncertain:
		add(fmt.Sprintf("uncertain/%d", st.Attempts), "run is Uncertain: %s", st.Message)
	}
	return out
}

// callEntries are the journal lines of one call: its approval (requested,
// decided), then its state and outcome.
func callEntries(run *exagentv1.AgentRun, j *journal, id string, add func(key, format string, a ...any)) {
	for _, a := range j.approvals {
		if a.CallID != id {
			continue
		}
		exp := "never expires"
		if a.ExpiresAt != nil {
			exp = "expires " + a.ExpiresAt.UTC().Format(time.RFC3339)
		}
		add("approval/"+a.ID, "paused: approval %s requested (rule %s, %s)", a.ID, orNone(a.Rule), exp)
		if a.State != exagentv1.ApprovalPending {
			by := ""
			if a.Actor != nil {
				by = " by " + a.Actor.Username
			}
			reason := ""
			if a.Reason != "" {
				reason = ": " + a.Reason
			}
			add("approval/"+a.ID+"/"+string(a.State), "decision: approval %s %s%s%s", a.ID, a.State, by, reason)
		}
	}
	c := j.call(id)
	if c == nil {
		return
	}
	if c.State != exagentv1.CallProposed && c.State != exagentv1.CallPending {
		if by := callProvenance(c, j.approvals, run.Status.Grants); by != "" {
			add("call/"+id+"/by", "call %s: %s", id, by)
		}
	}
	switch c.State {
	case exagentv1.CallStarted:
		if w := c.Wait; w != nil {
			// A wait is no IO: it resumes on its own (logs -f follows on).
			add("call/"+id+"/Waiting", "call %s waiting (%s) until %s", id, w.Kind, w.Until.UTC().Format(time.RFC3339))
			break
		}
		add("call/"+id+"/Started", "call %s started (attempt %d)", id, c.Attempt)
	case exagentv1.CallSucceeded, exagentv1.CallFailed:
		result := ""
		if o := c.Outcome; o != nil {
			result = ": " + o.Result
			if o.ResolvedBy != "" {
				result = fmt.Sprintf(" (resolved by %s: %s)%s", o.ResolvedBy, o.Evidence, result)
			}
		}
		add("call/"+id+"/"+string(c.State), "call %s %s%s", id, c.State, result)
	case exagentv1.CallUncertain:
		add("call/"+id+"/Uncertain", "call %s Uncertain: no confirmed outcome (kubectl approve resolve %s -n %s --call %s)", id, run.Name, run.Namespace, id)
	case exagentv1.CallRefused, exagentv1.CallDenied:
		add("call/"+id+"/"+string(c.State), "call %s %s", id, c.State)
	}
}

// waitingFor says what a run paused for a human waits for, with the
// commands that move it on; "" when it does not wait for a human.
func waitingFor(run *exagentv1.AgentRun) string {
	st := &run.Status
	switch st.Phase {
	case exagentv1.PhaseAwaitingApproval:
		var parts []string
		for _, a := range st.Pending() {
			if a.IsQuestion() {
				parts = append(parts, fmt.Sprintf("question %s (kubectl approve answer %s %s -n %s --text …)", a.ID, run.Name, a.ID, run.Namespace))
				continue
			}
			tool := "?"
			if c := st.Call(a.CallID); c != nil {
				tool = c.Tool
			}
			parts = append(parts, fmt.Sprintf("approval %s of %s (kubectl approve %s %s -n %s)", a.ID, tool, run.Name, a.ID, run.Namespace))
		}
		return "waiting for a decision: " + strings.Join(parts, "; ")
	case exagentv1.PhaseUncertain:
		var parts []string
		for _, c := range st.UncertainCalls() {
			parts = append(parts, fmt.Sprintf("call %s of %s (kubectl approve resolve %s -n %s --call %s --outcome …)", c.ID, c.Tool, run.Name, run.Namespace, c.ID))
		}
		return "waiting for a resolve: " + strings.Join(parts, "; ")
	}
	return ""
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", "⏎")
}
