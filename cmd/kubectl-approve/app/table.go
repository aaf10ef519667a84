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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const (
	argsWidth     = 40
	wideArgsWidth = 80
)

// printApprovalTable writes rows as kubectl-style columns. wide adds the
// agent, call, rule, revision and a short payload hash.
func printApprovalTable(w io.Writer, rows []pendingApproval, now time.Time, wide bool) error {
	return writeApprovalTable(w, rows, now, wide, true, columnsOf(rows))
}

// tableColumns are the columns a table shows only when some row needs
// them: VOTES (an approval under a quorum), CONVERSATION (a run that is
// a turn of a conversation).
type tableColumns struct {
	votes, conversation bool
}

func columnsOf(rows []pendingApproval) tableColumns {
	var c tableColumns
	for _, r := range rows {
		c.votes = c.votes || r.Quorum != ""
		c.conversation = c.conversation || r.Conversation != ""
	}
	return c
}

// writeApprovalTable is printApprovalTable with the optional columns
// given: `list -w` fixes them when it prints its header, and without
// header prints rows alone under it, in the same columns.
func writeApprovalTable(w io.Writer, rows []pendingApproval, now time.Time, wide, header bool, opt tableColumns) error {
	tw := printers.GetNewTabWriter(w)
	if header {
		cols := []string{"NAMESPACE", "RUN"}
		if opt.conversation {
			cols = append(cols, "CONVERSATION")
		}
		cols = append(cols, "APPROVAL", "TOOL", "ARGS", "REQUESTED", "EXPIRES")
		if opt.votes {
			cols = append(cols, "VOTES")
		}
		if wide {
			cols = append(cols, "AGENT", "CALL", "RULE", "REVISION", "PAYLOAD")
		}
		if _, err := fmt.Fprintln(tw, strings.Join(cols, "\t")); err != nil {
			return err
		}
	}
	width := argsWidth
	if wide {
		width = wideArgsWidth
	}
	for _, r := range rows {
		run := r.Run
		if r.Path != "" {
			run = r.Path // a child run, from its root down (tree.go)
		}
		cols := []string{r.Namespace, run}
		if opt.conversation {
			cols = append(cols, conversationCell(r))
		}
		cols = append(cols, r.Approval, orNone(r.Tool),
			truncate(argsCell(r), width),
			age(r.RequestedAt, now),
			expires(r.ExpiresAt, now),
		)
		if opt.votes {
			cols = append(cols, voteCell(r))
		}
		if wide {
			cols = append(cols, r.Agent, r.CallID, orNone(r.Rule),
				fmt.Sprint(r.Revision), shortHash(r.PayloadHash))
		}
		if _, err := fmt.Fprintln(tw, strings.Join(cols, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// conversationCell is the CONVERSATION column: the conversation a turn
// belongs to and its place in it ("billing #3"), "-" for other runs.
func conversationCell(r pendingApproval) string {
	switch {
	case r.Conversation == "":
		return "-"
	case r.Turn > 0:
		return fmt.Sprintf("%s #%d", r.Conversation, r.Turn)
	}
	return r.Conversation
}

// age is kubectl's AGE rendering of the time elapsed since t.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// expires renders the time left before t: "in 23h", "expired", or "never"
// for an approval whose timeout is Never.
func expires(t *time.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	if !t.After(now) {
		return "expired"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}

// compactJSON renders args on one line; arguments that are not JSON are shown as they are.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// prettyJSON renders args indented for reading.
func prettyJSON(raw string, indent string) string {
	if raw == "" {
		return indent + "{}"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(raw), indent, "  "); err != nil {
		return indent + raw
	}
	return indent + b.String()
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// shortHash keeps the algorithm prefix and the first 12 hex digits.
func shortHash(h string) string {
	algo, hex, ok := strings.Cut(h, ":")
	if !ok {
		return truncate(h, 12)
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return algo + ":" + hex
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// voteCell is the VOTES column: "1 (alice); needs 1 more from group security".
func voteCell(r pendingApproval) string {
	if r.Quorum == "" {
		return "-"
	}
	s := fmt.Sprint(len(r.Votes))
	if len(r.Votes) > 0 {
		s += " (" + strings.Join(r.Votes, ", ") + ")"
	}
	if r.Needs != "" {
		s += "; " + r.Needs
	}
	return s
}

// argsCell is the ARGS cell: the call's arguments, or for a question what
// it asks ("question: Which cluster? [eu|us]").
func argsCell(r pendingApproval) string {
	if r.Kind != string(exagentv1.KindQuestion) {
		return compactJSON(r.Args)
	}
	cell := "question: " + strings.Join(strings.Fields(r.Question), " ")
	if len(r.Choices) > 0 {
		cell += " [" + strings.Join(r.Choices, "|") + "]"
	}
	return cell
}
