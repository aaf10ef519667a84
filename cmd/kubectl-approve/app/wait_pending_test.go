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
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestPendingLine: wait says what a paused run waits for, approvals and
// questions apart.
func TestPendingLine(t *testing.T) {
	q := exagentv1.Approval{ID: "q", State: exagentv1.ApprovalPending, Kind: exagentv1.KindQuestion, Question: &exagentv1.Question{Text: "?"}}
	a := exagentv1.Approval{ID: "a", State: exagentv1.ApprovalPending}
	done := exagentv1.Approval{ID: "d", State: exagentv1.ApprovalApproved}
	for _, tc := range []struct {
		name      string
		approvals []exagentv1.Approval
		counter   int32
		want      string
	}{
		{"one approval", []exagentv1.Approval{a, done}, 1, "1 pending approval"},
		{"one question", []exagentv1.Approval{q}, 1, "1 pending question"},
		{"both", []exagentv1.Approval{a, q, q}, 3, "1 pending approval and 2 pending questions"},
		{"a child's, counted on the root", nil, 2, "2 pending approvals"},
		{"nothing", []exagentv1.Approval{done}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &exagentv1.AgentRun{Status: exagentv1.AgentRunStatus{Approvals: tc.approvals, PendingApprovals: tc.counter}}
			if got := pendingLine(run); got != tc.want {
				t.Errorf("pendingLine = %q, want %q", got, tc.want)
			}
		})
	}
}
