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

package notify

import (
	"fmt"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/clip"
)

// ArgsExcerptBytes bounds the arguments shown in an Event or a notification:
// enough to recognise the call, never the whole payload.
const ArgsExcerptBytes = 256

// Excerpt bounds s to n bytes, the "…" that marks a cut included (internal/clip).
func Excerpt(s string, n int) string { return clip.Bytes(s, n, clip.Ellipsis) }

// Commands are the exact kubectl commands that decide an approval.
type Commands struct {
	Show    string `json:"show"`
	Approve string `json:"approve"`
	Deny    string `json:"deny"`
}

// ApprovalCommands returns the kubectl approve commands for one approval of
// a run. The approval is named, so the command decides this request and no
// other even when several are pending.
func ApprovalCommands(namespace, run, approvalID string) Commands {
	return Commands{
		Show:    fmt.Sprintf("kubectl approve show %s -n %s", run, namespace),
		Approve: fmt.Sprintf("kubectl approve %s %s -n %s --reason \"…\"", run, approvalID, namespace),
		Deny:    fmt.Sprintf("kubectl approve deny %s %s -n %s --reason \"…\"", run, approvalID, namespace),
	}
}

// AnswerCommands are the commands for a question: show it, answer it,
// decline it (in the Approve and Deny slots, so a consumer of the
// commands needs no new fields).
func AnswerCommands(namespace, run, approvalID string) Commands {
	return Commands{
		Show:    fmt.Sprintf("kubectl approve show %s -n %s", run, namespace),
		Approve: fmt.Sprintf("kubectl approve answer %s %s -n %s --text \"…\"", run, approvalID, namespace),
		Deny:    fmt.Sprintf("kubectl approve answer %s %s -n %s --decline --reason \"…\"", run, approvalID, namespace),
	}
}

// ResolveCommand is the command that resolves an Uncertain call.
func ResolveCommand(namespace, run, callID string) string {
	return fmt.Sprintf("kubectl approve resolve %s -n %s --call %s --outcome Succeeded|Failed|Retry --evidence \"…\"", run, namespace, callID)
}

// ApprovalRequestedMessage is the text of the ApprovalRequested Event: the
// tool, an arguments excerpt, the expiry and the command to decide, within
// an Event's note limit.
func ApprovalRequestedMessage(run *exagentv1.AgentRun, st *exagentv1.AgentRunStatus, a exagentv1.Approval) string {
	tool, args := "?", ""
	if c := st.Call(a.CallID); c != nil {
		tool, args = c.Tool, c.Args
	}
	var b strings.Builder
	if a.IsQuestion() {
		fmt.Fprintf(&b, "%s asks a question (%s): %q", tool, a.ID, Excerpt(a.Question.Text, 300))
		if a.ExpiresAt != nil {
			fmt.Fprintf(&b, " until %s", a.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"))
		}
		fmt.Fprintf(&b, "; answer: %s", AnswerCommands(run.Namespace, run.Name, a.ID).Approve)
		return Excerpt(b.String(), 1000)
	}
	fmt.Fprintf(&b, "%s(%s) waits for approval %s", tool, Excerpt(args, 160), a.ID)
	if a.ExpiresAt != nil {
		fmt.Fprintf(&b, " until %s", a.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	cmds := ApprovalCommands(run.Namespace, run.Name, a.ID)
	fmt.Fprintf(&b, "; decide: %s (or: kubectl approve deny …)", cmds.Approve)
	return Excerpt(b.String(), 1000)
}
