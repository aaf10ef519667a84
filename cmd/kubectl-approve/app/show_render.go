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
	"io"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// showView is everything `show` prints, read beforehand so that rendering
// is a pure function.
type showView struct {
	Run        *exagentv1.AgentRun
	Agent      *exagentv1.Agent // nil when not readable
	AgentNote  string           // why Agent is nil
	ApprovalID string           // only this approval; all pending ones when empty
	YouMay     *bool            // RBAC answer for the current user; nil when unknown
	YouVerb    string           // the verb YouMay is about: approve or resolve
	Now        time.Time
	Tail       int // transcript messages; -1 all
	// Below and ByName are the run's delegation tree (tree.go); empty for a lone run.
	Below  []exagentv1.AgentRun
	ByName map[string]*exagentv1.AgentRun
	// Transcript ends with the run's last message: the whole logical
	// transcript, or enough of its tail for Tail, values inline (see
	// resolveShow); nil means run.Status.History.
	Transcript []exagentv1.Message
	// TranscriptTotal is the length of the whole logical transcript; 0
	// means len(Transcript).
	TranscriptTotal int
	// NotServed says that no exagent manager serves the run (served.go);
	// empty when one does.
	NotServed string
}

const (
	contentWidth = 160
	labelWidth   = 17
)

func renderShow(w io.Writer, v showView) error {
	run := v.Run
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(w, format+"\n", a...) }
	// field writes "label:" padded to one column so values line up.
	field := func(label, format string, a ...any) {
		_, _ = fmt.Fprintf(w, "%-*s %s\n", labelWidth, label+":", fmt.Sprintf(format, a...))
	}

	field("Run", "%s/%s", run.Namespace, run.Name)
	field("Agent", "%s", run.Spec.AgentRef.Name)
	field("Phase", "%s (step %d, revision %d)", orNone(string(run.Status.Phase)), run.Status.Cursor.Step, run.Status.Revision)
	if run.Status.Message != "" {
		field("Message", "%s", run.Status.Message)
	}
	if rb := run.Spec.RequestedBy; rb != nil {
		field("Requested by", "%s", rb.Username)
	}
	if l := run.Status.Limits; l != nil {
		field("Limits", "%s", limitsLine(l, &run.Status.Ledger))
	}
	if v.NotServed != "" {
		p("")
		p("%s.", v.NotServed)
	}
	renderTree(w, run, v.Below, v.ByName)

	approvals := v.approvals()
	if len(approvals) == 0 {
		p("")
		p("No pending approvals.")
	}
	for _, a := range approvals {
		p("")
		if a.IsQuestion() {
			renderQuestion(w, run, &a, v.Now)
			continue
		}
		p("Approval %s (%s):", a.ID, a.State)
		call := run.Status.Call(a.CallID)
		if call != nil {
			field("  Tool", "%s (call %s, step %d)", call.Tool, call.ID, call.Step)
			switch {
			case a.Edit != nil && a.Edit.Args != "":
				p("  Arguments (edited by %s; every vote is on this version):", a.Edit.Editor.Username)
				_, _ = fmt.Fprintln(w, prettyJSON(a.Edit.Args, "    "))
				p("  The model's arguments:")
				_, _ = fmt.Fprintln(w, prettyJSON(call.Args, "    "))
			case call.Edit != nil:
				p("  Arguments (edited by %s; the call runs with these):", call.Edit.Editor.Username)
				_, _ = fmt.Fprintln(w, prettyJSON(call.Args, "    "))
				p("  The model's arguments:")
				_, _ = fmt.Fprintln(w, prettyJSON(orNone(call.Edit.ModelArgs), "    "))
			default:
				p("  Arguments:")
				_, _ = fmt.Fprintln(w, prettyJSON(call.Args, "    "))
			}
			if m := call.MCP; m != nil {
				field("  MCP server", "%s (tool %s)", m.Server, m.Tool)
				title := ""
				if m.Title != "" {
					title = fmt.Sprintf("title %q, ", m.Title)
				}
				field("  Annotations", "%sreadOnlyHint=%t destructiveHint=%t idempotentHint=%t openWorldHint=%t "+
					"(the server's own hints, unverified)", title, m.ReadOnlyHint, m.DestructiveHint, m.IdempotentHint, m.OpenWorldHint)
			}
		} else {
			field("  Tool", "<unknown> (call %s not in the journal)", a.CallID)
		}
		field("  Payload hash", "%s", a.CurrentPayloadHash())
		field("  Revision", "%d", a.Revision)
		field("  Policy rule", "%s", ruleName(a.Rule))
		if q := a.Quorum; q != nil {
			field("  Quorum", "%s", quorumLine(q))
			field("  Votes", "%s", votesLine(&a))
			if m := a.QuorumMissing(); m != "" && a.State == exagentv1.ApprovalPending {
				field("  Still", "%s", m)
			}
		}
		field("  Requested", "%s (%s ago)", a.RequestedAt.UTC().Format(time.RFC3339), age(a.RequestedAt.Time, v.Now))
		if a.ExpiresAt == nil {
			field("  Expires", "never")
		} else {
			field("  Expires", "%s (%s)", a.ExpiresAt.UTC().Format(time.RFC3339), expires(&a.ExpiresAt.Time, v.Now))
		}
		if a.State == exagentv1.ApprovalPending {
			// --expect-hash: the command decides only the call shown here.
			field("  Approve", "kubectl approve %s %s --expect-hash %s", run.Name, a.ID, a.CurrentPayloadHash())
			field("  Deny", "kubectl approve deny %s %s --expect-hash %s", run.Name, a.ID, a.CurrentPayloadHash())
			field("  Or", "edit it (kubectl approve %s %s --set key=value), or approve the tool for the run (--for-run)", run.Name, a.ID)
		} else if a.Actor != nil {
			field("  Decided", "%s by %s%s", orNone(a.Decision), approvalDeciders(&a), reasonSuffix(a.Reason))
		}
	}

	// The current step's calls, with what decided each (older steps' are
	// in logs, which reads the sealed journal too).
	var decided []string
	for i := range run.Status.Calls {
		c := &run.Status.Calls[i]
		if c.Step != run.Status.Cursor.Step {
			continue
		}
		if by := callProvenance(c, run.Status.Approvals, run.Status.Grants); by != "" {
			decided = append(decided, fmt.Sprintf("%-*s %s %s: %s", labelWidth, "  "+c.ID+":", c.Tool, c.State, by))
		}
	}
	if len(decided) > 0 {
		p("")
		p("Calls of step %d (what the policy and people decided; kubectl approve logs %s shows every step's):", run.Status.Cursor.Step, run.Name)
		for _, line := range decided {
			p("%s", line)
		}
	}
	for _, g := range run.Status.Grants {
		field("Approved for run", "tool %s (rule %s) by %s, decision %s", g.Tool, orNone(g.Rule), actorNames(g.Actors), g.Decision)
	}

	if unc := run.Status.UncertainCalls(); len(unc) > 0 {
		p("")
		if run.Status.Phase == exagentv1.PhaseCancelled {
			p("Uncertain calls (the run is cancelled: nothing runs again; record what happened with kubectl approve resolve):")
		} else {
			p("Uncertain calls (need kubectl approve resolve):")
		}
		for _, c := range unc {
			field("  "+c.ID, "%s %s", c.Tool, truncate(compactJSON([]byte(c.Args)), argsWidth))
		}
	}

	if waits := waitsOf([]exagentv1.AgentRun{*run}); len(waits) > 0 {
		p("")
		p("Waiting (no worker holds the run; it resumes on its own, kubectl approve cancel %s stops it):", run.Name)
		for _, x := range waits {
			what := x.Kind
			if x.For != "" {
				what += " " + x.For
			}
			c := run.Status.Call(x.Call)
			field("  "+x.Call, "%s %s since %s, until %s (%s)", x.Tool, what, c.Wait.Since.UTC().Format(time.RFC3339),
				x.Until.Format(time.RFC3339), untilIn(x.Until, v.Now))
		}
	}

	p("")
	p("Who may decide:")
	field("  RBAC", "verb %q on %s/%s %q in namespace %q (ClusterRole exagent-approver; %s: exagent-resolver)",
		exagentv1.VerbApprove, exagentv1.ApprovalResource, exagentv1.ApprovalSubresource, run.Spec.AgentRef.Name, run.Namespace,
		exagentv1.VerbResolve)
	field("  Never", "system:serviceaccount:%s:%s (the run's own ServiceAccount) and the exagent manager's identity",
		run.Namespace, run.Spec.ServiceAccount())
	switch v.Agent {
	case nil:
		field("  Approvers", "<unknown: agent %s>", v.AgentNote)
	default:
		field("  Approvers", "%s", approversLine(v.Agent.Spec.Policy.Approvers))
		if v.Agent.Spec.Policy.ForbidSelfApproval {
			who := "the run's requester"
			if run.Spec.RequestedBy != nil {
				who = run.Spec.RequestedBy.Username
			}
			field("  Self-approval", "forbidden (%s may not decide)", who)
		}
	}
	switch {
	case v.YouMay == nil:
		field("  You", "<unknown>")
	case *v.YouMay:
		field("  You", "RBAC allows you to %s", v.verb())
	default:
		field("  You", "RBAC does not allow you to %s (missing verb %q on agents/approval)", v.verb(), v.verb())
	}

	if run.Status.Phase == exagentv1.PhaseSucceeded && run.Status.Output != "" {
		p("")
		p("Output:")
		for _, line := range strings.Split(strings.TrimRight(run.Status.Output, "\n"), "\n") {
			p("  %s", line)
		}
	}

	msgs, total := v.Transcript, v.TranscriptTotal
	if msgs == nil {
		msgs = run.Status.History
	}
	if total == 0 {
		total = len(msgs)
	}
	return renderTranscript(w, msgs, total, v.Tail)
}

func (v showView) verb() string {
	if v.YouVerb == "" {
		return exagentv1.VerbApprove
	}
	return v.YouVerb
}

// approvals are the ones to show: the named one, or every pending one.
func (v showView) approvals() []exagentv1.Approval {
	if v.ApprovalID != "" {
		if a := v.Run.Status.Approval(v.ApprovalID); a != nil {
			return []exagentv1.Approval{*a}
		}
		return nil
	}
	return v.Run.Status.Pending()
}

func approversLine(a *exagentv1.Approvers) string {
	if a == nil || (len(a.Users) == 0 && len(a.Groups) == 0 && len(a.ServiceAccounts) == 0) {
		return "anyone RBAC allows (the Agent's policy names no approvers)"
	}
	var parts []string
	if len(a.Users) > 0 {
		parts = append(parts, "users "+strings.Join(a.Users, ", "))
	}
	if len(a.Groups) > 0 {
		parts = append(parts, "groups "+strings.Join(a.Groups, ", "))
	}
	if len(a.ServiceAccounts) > 0 {
		parts = append(parts, "serviceAccounts "+strings.Join(a.ServiceAccounts, ", "))
	}
	return strings.Join(parts, "; ")
}

func ruleName(r string) string {
	if r == "" {
		return "<policy default>"
	}
	return r
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return fmt.Sprintf(": %q", r)
}

// renderTranscript writes the last tail messages of history, the end of
// a transcript of total messages.
func renderTranscript(w io.Writer, history []exagentv1.Message, total, tail int) error {
	if tail == 0 {
		return nil
	}
	start := 0
	if tail > 0 && len(history) > tail {
		start = len(history) - tail
	}
	if _, err := fmt.Fprintf(w, "\nTranscript (%s):\n", transcriptCount(len(history)-start, total)); err != nil {
		return err
	}
	if len(history) == 0 {
		_, err := fmt.Fprintln(w, "  <empty>")
		return err
	}
	for _, m := range history[start:] {
		for _, line := range messageLines(m) {
			if _, err := fmt.Fprintf(w, "  %-12s %s\n", "["+string(m.Role)+"]", line); err != nil {
				return err
			}
		}
	}
	return nil
}

func transcriptCount(shown, total int) string {
	if shown == total {
		return fmt.Sprintf("%d messages", total)
	}
	return fmt.Sprintf("last %d of %d messages", shown, total)
}

// messageLines renders one message: its text on one line, then one line per tool call.
func messageLines(m exagentv1.Message) []string {
	var lines []string
	text := strings.Join(strings.Fields(m.Content), " ")
	if m.ToolCallID != "" {
		text = fmt.Sprintf("(%s) %s", m.ToolCallID, text)
	}
	if text != "" {
		lines = append(lines, truncate(text, contentWidth))
	}
	for _, tc := range m.ToolCalls {
		lines = append(lines, truncate(fmt.Sprintf("→ %s %s (call %s)", tc.Name, compactJSON([]byte(tc.Arguments)), tc.ID), contentWidth))
	}
	if len(lines) == 0 {
		lines = append(lines, "<empty>")
	}
	return lines
}

// renderQuestion prints a request of kind Question: what it asks, the
// schema an answer must match, and how to answer (or how it was answered).
// The text is the asker's, untrusted: it is printed indented, never run.
func renderQuestion(w io.Writer, run *exagentv1.AgentRun, a *exagentv1.Approval, now time.Time) {
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format+"\n", args...) }
	field := func(label, format string, args ...any) {
		_, _ = fmt.Fprintf(w, "%-*s %s\n", labelWidth, label+":", fmt.Sprintf(format, args...))
	}
	q := a.Question
	p("Question %s (%s):", a.ID, a.State)
	if call := run.Status.Call(a.CallID); call != nil {
		field("  Asked by", "the model, with tool %s (call %s, step %d)", call.Tool, call.ID, call.Step)
	}
	p("  Question:")
	for _, line := range strings.Split(strings.TrimRight(q.Text, "\n"), "\n") {
		p("    %s", line)
	}
	if len(q.Choices) > 0 {
		field("  Choices", "%s", strings.Join(q.Choices, " | "))
	}
	switch q.Source {
	case exagentv1.QuestionAskHuman:
	case exagentv1.QuestionParticipant:
		who := &exagentv1.Approvers{}
		if q.Answerers != nil {
			who = q.Answerers
		}
		participant := a.CallID
		if c := run.Status.Call(a.CallID); c != nil {
			participant = c.Tool
		}
		field("  Asked of", "participant %s of the conversation: their answer is their turn (users: %s; groups: %s)",
			participant, orNone(strings.Join(who.Users, ", ")), orNone(strings.Join(who.Groups, ", ")))
	default:
		field("  Asked by", "the MCP server of the call (input request %s), not the model", q.RequestID)
	}
	if q.URL != "" {
		field("  Visit", "%s", q.URL)
		field("  Origin", "%s (the server's link: check it before you open it; the manager never fetches it)", orNone(exagentv1.URLOrigin(q.URL)))
		field("  Then", "kubectl approve answer %s %s --text done   (or --decline)", run.Name, a.ID)
	}
	p("  Answer schema:")
	_, _ = fmt.Fprintln(w, prettyJSON(q.Schema, "    "))
	field("  Payload hash", "%s", a.PayloadHash)
	field("  Revision", "%d", a.Revision)
	field("  Requested", "%s (%s ago)", a.RequestedAt.UTC().Format(time.RFC3339), age(a.RequestedAt.Time, now))
	if a.ExpiresAt == nil {
		field("  Expires", "never")
	} else {
		field("  Expires", "%s (%s)", a.ExpiresAt.UTC().Format(time.RFC3339), expires(&a.ExpiresAt.Time, now))
	}
	switch {
	case a.State == exagentv1.ApprovalPending && q.Source == exagentv1.QuestionMCPSampling:
		field("  Answer", "kubectl approve answer %s %s --text approve   (sends the server's request to the run's model, charged to this run)", run.Name, a.ID)
		field("  Or", "kubectl approve answer %s %s --decline --reason …   (the call fails)", run.Name, a.ID)
	case a.State == exagentv1.ApprovalPending && q.URL != "":
		field("  Or", "kubectl approve answer %s %s --decline --reason …", run.Name, a.ID)
	case a.State == exagentv1.ApprovalPending:
		field("  Answer", "kubectl approve answer %s %s --text …  |  --set key=value  |  -f answer.json", run.Name, a.ID)
		field("  Or", "kubectl approve answer %s %s --decline --reason …", run.Name, a.ID)
	case a.State == exagentv1.ApprovalAnswered && a.Actor != nil:
		if q.Action == exagentv1.AnswerAccept {
			field("  Answered", "by %s%s", a.Actor.Username, reasonSuffix(a.Reason))
			_, _ = fmt.Fprintln(w, prettyJSON(q.Answer, "    "))
		} else {
			field("  Answered", "%s by %s%s", q.Action, a.Actor.Username, reasonSuffix(a.Reason))
		}
	}
}

// limitsLine is the limits the run holds (status.limits, journaled at its
// first claim: an Agent edit may narrow them, never widen them), with
// what the run used of those the ledger counts.
func limitsLine(l *exagentv1.RunLimits, u *exagentv1.Ledger) string {
	var parts []string
	if l.MaxSteps != nil {
		parts = append(parts, fmt.Sprintf("maxSteps %d", *l.MaxSteps))
	}
	if l.MaxToolCalls != nil {
		parts = append(parts, fmt.Sprintf("maxToolCalls %d (%d used)", *l.MaxToolCalls, u.ToolCalls))
	}
	if l.MaxTokens != nil {
		parts = append(parts, fmt.Sprintf("maxTokens %d (%d used)", *l.MaxTokens, u.PromptTokens+u.CompletionTokens))
	}
	if l.ActiveTime != nil {
		parts = append(parts, fmt.Sprintf("activeTime %s (%s used)", l.ActiveTime.Duration, u.ActiveTimeUsed.Round(time.Second)))
	}
	if l.MaxRuns != nil {
		parts = append(parts, fmt.Sprintf("maxRuns %d", *l.MaxRuns))
	}
	if l.MaxDepth != nil {
		parts = append(parts, fmt.Sprintf("maxDepth %d", *l.MaxDepth))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
