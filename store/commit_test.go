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

package store

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestCommitStepsAskForSinksOnlyWhenNeeded: the notify step reads the
// Agent's sinks only for a write that makes a notification true, so a
// commit that journals none never pays an Agent read; and the steps run in
// the order the caller lists them, each seeing what the one before did.
func TestCommitStepsAskForSinksOnlyWhenNeeded(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	sink := exagentv1.NotifySink{Name: "ops", URL: "https://hooks.example/x"}
	pending := exagentv1.Approval{ID: "call-1", State: exagentv1.ApprovalPending, RequestedAt: metav1.NewTime(now)}
	tests := map[string]struct {
		old, next   exagentv1.AgentRunStatus
		wantLookups int
		wantRecords int
	}{
		"a turn that journals no notification": {
			old:  exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning},
			next: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Message: "turn 2"},
		},
		"an approval asked for": {
			old:         exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning},
			next:        exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending}},
			wantLookups: 1, wantRecords: 1,
		},
		"the run ended": {
			old:         exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning},
			next:        exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded},
			wantLookups: 1, wantRecords: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lookups := 0
			sinks := Sinks(func() []exagentv1.NotifySink { lookups++; return []exagentv1.NotifySink{sink} })
			run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u-1"}, Status: tc.old}
			next := tc.next
			var order []string
			mark := func(label string) Step {
				return func(_ context.Context, d *Draft) error {
					order = append(order, label+":"+strings.Repeat("n", len(d.Status.Notifications)))
					return nil
				}
			}
			var p *CommitSteps // a bare store's steps: no seal, no tracer
			steps := []Step{mark("before"), p.Notify(sinks), mark("after")}
			d := &Draft{Run: run, Status: &next, Now: now}
			for _, s := range steps {
				if err := s(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			}
			if lookups != tc.wantLookups {
				t.Errorf("the Agent's sinks were read %d times, want %d", lookups, tc.wantLookups)
			}
			if len(next.Notifications) != tc.wantRecords {
				t.Errorf("journaled %d notification records, want %d: %+v", len(next.Notifications), tc.wantRecords, next.Notifications)
			}
			want := []string{"before:", "after:" + strings.Repeat("n", tc.wantRecords)}
			if strings.Join(order, ",") != strings.Join(want, ",") {
				t.Errorf("steps saw %v, want %v (in the listed order)", order, want)
			}
		})
	}
}
