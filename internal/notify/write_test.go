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
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestMergeRecords: after a lost compare-and-swap, this process's journal
// goes onto the newer status — a record still Pending there takes our
// progress, a record settled there stays as it is, one we added is
// appended (and superseded when the newer status settled its subject),
// and an approval we marked journaled stays marked.
func TestMergeRecords(t *testing.T) {
	rec := func(id string, e exagentv1.NotifyEvent, subject string, state exagentv1.NotificationState, attempts int32) exagentv1.NotificationRecord {
		return exagentv1.NotificationRecord{ID: id, Event: e, Subject: subject, Sink: "s", State: state, Attempts: attempts}
	}
	decided := pending("a2")
	decided.State = exagentv1.ApprovalApproved
	fresh := exagentv1.AgentRunStatus{
		Phase:     exagentv1.PhaseAwaitingApproval,
		Approvals: []exagentv1.Approval{pending("a1"), decided},
		Notifications: []exagentv1.NotificationRecord{
			rec("ours-progress", exagentv1.NotifyApprovalRequested, "a1", exagentv1.NotificationPending, 0),
			rec("settled-there", exagentv1.NotifyRunUncertain, "attempt-1", exagentv1.NotificationDelivered, 2),
		},
	}
	mine := *fresh.DeepCopy()
	mine.Approvals[0].Notified = []exagentv1.NotifyEvent{exagentv1.NotifyApprovalRequested}
	mine.Approvals[1].State = exagentv1.ApprovalPending // we read it before it was decided
	mine.Notifications = []exagentv1.NotificationRecord{
		rec("ours-progress", exagentv1.NotifyApprovalRequested, "a1", exagentv1.NotificationDelivered, 1),
		rec("settled-there", exagentv1.NotifyRunUncertain, "attempt-1", exagentv1.NotificationPending, 1),
		rec("added", exagentv1.NotifyApprovalExpiring, "a1", exagentv1.NotificationPending, 0),
		rec("added-for-decided", exagentv1.NotifyApprovalExpiring, "a2", exagentv1.NotificationPending, 0),
	}

	mergeRecords(&fresh, &mine)

	superseded := rec("added-for-decided", exagentv1.NotifyApprovalExpiring, "a2", exagentv1.NotificationSuperseded, 0)
	superseded.LastError = "the approval was settled before the notification was delivered"
	want := []exagentv1.NotificationRecord{
		rec("ours-progress", exagentv1.NotifyApprovalRequested, "a1", exagentv1.NotificationDelivered, 1),
		rec("settled-there", exagentv1.NotifyRunUncertain, "attempt-1", exagentv1.NotificationDelivered, 2),
		rec("added", exagentv1.NotifyApprovalExpiring, "a1", exagentv1.NotificationPending, 0),
		superseded,
	}
	if diff := cmp.Diff(want, fresh.Notifications); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if !Notified(&fresh.Approvals[0], exagentv1.NotifyApprovalRequested) {
		t.Errorf("approval a1 lost our notified mark: %+v", fresh.Approvals[0].Notified)
	}
	if fresh.Approvals[1].State != exagentv1.ApprovalApproved {
		t.Errorf("the merge changed the newer status's approval: %s", fresh.Approvals[1].State)
	}
}
