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

package chaos

import (
	"fmt"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// timelineSpan is how many writes before and after the offending one a
// timeline shows.
const timelineSpan = 12

// Timeline renders the writes of one run around index at, one line each:
// resourceVersion, phase, claim, cursor, calls and approvals — the history
// a failure message shows.
func Timeline(vs []Version, at int) string {
	if len(vs) == 0 {
		return ""
	}
	from, to := max(at-timelineSpan, 0), min(at+timelineSpan, len(vs)-1)
	var b strings.Builder
	if from > 0 {
		fmt.Fprintf(&b, "    … %d earlier writes\n", from)
	}
	for i := from; i <= to; i++ {
		mark := "  "
		if i == at {
			mark = "=>"
		}
		fmt.Fprintf(&b, "  %s %s\n", mark, Line(vs[i]))
	}
	if to < len(vs)-1 {
		fmt.Fprintf(&b, "    … %d later writes\n", len(vs)-1-to)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Line is one write of a run in a few words.
func Line(v Version) string {
	if v.Deleted || v.Run == nil {
		return fmt.Sprintf("rv=%d seen=%s DELETED", v.RV, stamp(v.Seen))
	}
	st := &v.Run.Status
	claim := "-"
	if c := st.Claim; c != nil {
		claim = fmt.Sprintf("%s#%d until %s", c.Holder, c.Attempt, stamp(c.LeaseExpiresAt.Time))
	}
	cursor := fmt.Sprintf("%d/%s", st.Cursor.Step, st.Cursor.Stage)
	if m := st.Cursor.ModelRequest; m != nil {
		cursor += fmt.Sprintf(" model#%d@%d", m.Request, m.Attempt)
	}
	calls := make([]string, 0, len(st.Calls))
	for _, c := range st.Calls {
		s := fmt.Sprintf("%s:%s", c.ID, c.State)
		if c.Attempt != 0 {
			s += fmt.Sprintf("@%d", c.Attempt)
		}
		if c.Outcome != nil && c.Outcome.ResolvedBy != "" {
			s += "(resolved by " + c.Outcome.ResolvedBy + ")"
		}
		calls = append(calls, s)
	}
	approvals := make([]string, 0, len(st.Approvals))
	for _, a := range st.Approvals {
		s := fmt.Sprintf("%s:%s", a.ID, a.State)
		if a.Actor != nil {
			s += "(" + a.Actor.Username + ")"
		}
		approvals = append(approvals, s)
	}
	return fmt.Sprintf("rv=%d seen=%s %s attempts=%d claim=%s cursor=%s calls=[%s] approvals=[%s] receipts=%d%s",
		v.RV, stamp(v.Seen), phaseWord(st.Phase), st.Attempts, claim, cursor,
		strings.Join(calls, " "), strings.Join(approvals, " "), len(st.Receipts), reasonSuffix(st))
}

func phaseWord(p exagentv1.RunPhase) string {
	if p == "" {
		return "(new)"
	}
	return string(p)
}

func reasonSuffix(st *exagentv1.AgentRunStatus) string {
	if st.Reason == "" {
		return ""
	}
	return " reason=" + st.Reason
}
