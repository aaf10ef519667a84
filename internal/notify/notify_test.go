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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func pending(id string) exagentv1.Approval {
	exp := metav1.NewTime(t0.Add(4 * time.Hour))
	return exagentv1.Approval{ID: id, CallID: "c-" + id, State: exagentv1.ApprovalPending, RequestedAt: metav1.NewTime(t0), ExpiresAt: &exp}
}

func TestTransitions(t *testing.T) {
	decided := pending("a1")
	decided.State = exagentv1.ApprovalApproved
	tests := map[string]struct {
		old, next exagentv1.AgentRunStatus
		want      []Event
	}{
		"pause": {old: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning},
			next: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending("a1"), pending("a2")}},
			want: []Event{{exagentv1.NotifyApprovalRequested, "a1"}, {exagentv1.NotifyApprovalRequested, "a2"}}},
		"still pending: nothing new": {
			old:  exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending("a1")}},
			next: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending("a1")}}},
		"recovered uncertain": {old: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Attempts: 2},
			next: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseUncertain, Attempts: 2},
			want: []Event{{exagentv1.NotifyRunUncertain, "attempt-2"}}},
		"denied ends": {old: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending("a1")}},
			next: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseDenied, Approvals: []exagentv1.Approval{decided}},
			want: []Event{{exagentv1.NotifyRunEnded, "Denied"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Transitions(&tc.old, &tc.next)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestJournalAndSupersede(t *testing.T) {
	sinks := []exagentv1.NotifySink{{Name: "all"}, {Name: "ends", Events: []exagentv1.NotifyEvent{exagentv1.NotifyRunEnded}}}
	old := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning}
	next := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending("a1")}}
	Journal(&old, &next, "uid", sinks, t0)
	if len(next.Notifications) != 1 || next.Notifications[0].Sink != "all" || next.Notifications[0].ID != "uid.approval-requested.a1" {
		t.Fatalf("records = %+v", next.Notifications)
	}
	again := *next.DeepCopy()
	Journal(&next, &again, "uid", sinks, t0.Add(time.Minute))
	if len(again.Notifications) != 1 {
		t.Fatalf("a commit that changes nothing adds records: %+v", again.Notifications)
	}
	decided := *again.DeepCopy()
	decided.Approvals[0].State = exagentv1.ApprovalDenied
	decided.Phase = exagentv1.PhaseDenied
	Journal(&again, &decided, "uid", sinks, t0.Add(time.Hour))
	got := map[string]exagentv1.NotificationState{}
	for _, r := range decided.Notifications {
		got[r.Sink+"/"+string(r.Event)] = r.State
	}
	want := map[string]exagentv1.NotificationState{
		"all/ApprovalRequested": exagentv1.NotificationSuperseded,
		"all/RunEnded":          exagentv1.NotificationPending,
		"ends/RunEnded":         exagentv1.NotificationPending,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	if !Supersede(&decided, sinks[:1], true) || decided.Notifications[len(decided.Notifications)-1].State != exagentv1.NotificationSuperseded {
		t.Errorf("a removed sink's pending record is not superseded: %+v", decided.Notifications)
	}
}

func TestBoundDropsSettledFirst(t *testing.T) {
	st := exagentv1.AgentRunStatus{}
	for i := range exagentv1.MaxNotificationRecords {
		state := exagentv1.NotificationDelivered
		if i == 0 {
			state = exagentv1.NotificationPending
		}
		st.Notifications = append(st.Notifications, exagentv1.NotificationRecord{ID: fmt.Sprint(i), Sink: "s", State: state})
	}
	Add(&st, "uid", []Event{{exagentv1.NotifyRunEnded, "Succeeded"}}, []exagentv1.NotifySink{{Name: "s"}}, t0)
	if len(st.Notifications) != exagentv1.MaxNotificationRecords {
		t.Fatalf("journal has %d records, want %d", len(st.Notifications), exagentv1.MaxNotificationRecords)
	}
	if st.Notifications[0].ID != "0" || st.Notifications[1].ID != "2" || st.Notifications[len(st.Notifications)-1].Event != exagentv1.NotifyRunEnded {
		t.Errorf("want the oldest delivered record dropped, the pending one and the new one kept: first %s %s, last %+v",
			st.Notifications[0].ID, st.Notifications[1].ID, st.Notifications[len(st.Notifications)-1])
	}
}

func TestExpiring(t *testing.T) {
	st := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending("a1")}}
	// 4h timeout: warned 1h before (a quarter, at most an hour).
	due, next := Expiring(&st, t0.Add(2*time.Hour))
	if len(due) != 0 || !next.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("before the warning: due %v next %s", due, next)
	}
	due, _ = Expiring(&st, t0.Add(3*time.Hour+time.Minute))
	if diff := cmp.Diff([]Event{{exagentv1.NotifyApprovalExpiring, "a1"}}, due); diff != "" {
		t.Errorf("at the warning (-want +got):\n%s", diff)
	}
	if due, _ := Expiring(&st, t0.Add(5*time.Hour)); len(due) != 0 {
		t.Errorf("after expiry nothing is due: %v", due)
	}
}

func TestSignIsStandardWebhooks(t *testing.T) {
	key := []byte("super secret key")
	body := []byte(`{"a":1}`)
	h, err := Sign("whsec_"+base64.StdEncoding.EncodeToString(key), "msg_1", time.Unix(1700000000, 0), body)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("msg_1.1700000000." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if h.Get("webhook-signature") != want || h.Get("webhook-id") != "msg_1" || h.Get("webhook-timestamp") != "1700000000" {
		t.Errorf("headers %v, want signature %s", h, want)
	}
	if _, err := Sign("whsec_not base64!", "m", t0, body); err == nil {
		t.Error("a whsec_ key that is not base64 signs")
	}
}

func TestRetryBackoff(t *testing.T) {
	r := Retry{Attempts: 5, Base: time.Second, Max: 3 * time.Second}
	at := metav1.NewTime(t0)
	for attempts, want := range map[int32]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 3 * time.Second, 4: 3 * time.Second} {
		rec := exagentv1.NotificationRecord{Attempts: attempts, LastAttemptAt: &at}
		if got := r.NextAttempt(&rec).Sub(t0); got != want {
			t.Errorf("after %d attempts wait %s, want %s", attempts, got, want)
		}
	}
	if !r.NextAttempt(&exagentv1.NotificationRecord{}).IsZero() {
		t.Error("a record never attempted waits")
	}
}

var nextField = regexp.MustCompile(`\n {14}[a-zA-Z]`)

// TestBoundsMatchTheCRD: the constants the code bounds with are the ones
// the generated CRDs enforce on the lists.
func TestBoundsMatchTheCRD(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "config", "crd", "bases")
	for _, tc := range []struct {
		crd, field string
		max        int
	}{
		{"exagent.io_agentruns.yaml", "\n              notifications:\n", exagentv1.MaxNotificationRecords},
		{"exagent.io_agents.yaml", "\n              notify:\n", exagentv1.MaxNotifySinks},
	} {
		b, err := os.ReadFile(filepath.Join(root, tc.crd))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), tc.field)
		if !ok {
			t.Fatalf("%s has no %q", tc.crd, tc.field)
		}
		// The list's own maxItems is in its block, which ends at the next field of its indentation.
		block := rest
		if loc := nextField.FindStringIndex(rest); loc != nil {
			block = rest[:loc[0]]
		}
		if !strings.Contains(block, fmt.Sprintf("\n                maxItems: %d\n", tc.max)) {
			t.Errorf("%s: %s is not bounded by maxItems %d", tc.crd, strings.TrimSpace(tc.field), tc.max)
		}
	}
}

// deliverAll plays the delivery worker: every pending record is sent
// (counted by notification id and sink) and journaled Delivered.
func deliverAll(st *exagentv1.AgentRunStatus, sent map[string]int) {
	for _, i := range Pending(st) {
		r := &st.Notifications[i]
		sent[r.ID+" → "+r.Sink]++
		r.State = exagentv1.NotificationDelivered
	}
}

// TestJournalBeyondItsBound: 24 approvals pending at once, 3 sinks — 72
// ApprovalRequested records, then 72 ApprovalExpiring, more than the
// journal holds. Nothing pending is dropped: what finds no room is left
// for later and journaled as delivered records leave; each sink is sent
// each notification once, however often the worker looks again (the
// ApprovalExpiring of an approval whose delivered record left the journal
// is not journaled again).
func TestJournalBeyondItsBound(t *testing.T) {
	sinks := []exagentv1.NotifySink{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	old := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning}
	next := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval}
	for i := range 24 {
		next.Approvals = append(next.Approvals, pending(fmt.Sprintf("a%02d", i)))
	}
	left := Journal(&old, &next, "uid", sinks, t0)
	if len(next.Notifications) > exagentv1.MaxNotificationRecords || len(left) == 0 {
		t.Fatalf("the pause journaled %d records and left %d events", len(next.Notifications), len(left))
	}
	if got := len(Unannounced(&next)); got != len(left) {
		t.Fatalf("%d events left, %d approvals still to announce", len(left), got)
	}
	sent := map[string]int{}
	warned := t0.Add(3*time.Hour + time.Minute) // past every warning, before any expiry
	for round := range 20 {
		now := t0.Add(time.Duration(round) * time.Minute)
		if round >= 10 {
			now = warned
		}
		due, _ := Due(&next, now)
		Add(&next, "uid", due, sinks, now)
		if n := len(next.Notifications); n > exagentv1.MaxNotificationRecords {
			t.Fatalf("round %d: %d records, over the bound", round, n)
		}
		deliverAll(&next, sent)
	}
	for i := range 24 {
		for _, s := range sinks {
			for _, kind := range []string{"approval-requested", "approval-expiring"} {
				key := fmt.Sprintf("uid.%s.a%02d → %s", kind, i, s.Name)
				if sent[key] != 1 {
					t.Errorf("%s sent %d times, want once", key, sent[key])
				}
			}
		}
	}
	if len(sent) != 24*3*2 {
		t.Errorf("%d notifications sent, want %d", len(sent), 24*3*2)
	}
	if due, _ := Due(&next, warned); len(due) != 0 {
		t.Errorf("still due after everything was sent: %v", due)
	}
}

// TestJournalKeepsWhatWouldBeResent: a delivered record whose approval is
// pending and not marked (journaled by an older manager) is never the one
// dropped to make room: dropping it would send it again.
func TestJournalKeepsWhatWouldBeResent(t *testing.T) {
	st := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Approvals: []exagentv1.Approval{pending("old")}}
	for i := range exagentv1.MaxNotificationRecords {
		st.Notifications = append(st.Notifications, exagentv1.NotificationRecord{ID: ID("uid", Event{exagentv1.NotifyApprovalRequested, "old"}),
			Event: exagentv1.NotifyApprovalRequested, Subject: "old", Sink: fmt.Sprint(i), State: exagentv1.NotificationDelivered})
	}
	added, left := Add(&st, "uid", []Event{{exagentv1.NotifyRunEnded, "Failed"}}, []exagentv1.NotifySink{{Name: "x"}}, t0)
	if added || len(left) != 1 || len(st.Notifications) != exagentv1.MaxNotificationRecords {
		t.Fatalf("added %v, left %v, %d records: want nothing dropped, the event left", added, left, len(st.Notifications))
	}
}

// TestBuildNamesTheConversation: a turn's notification says which
// conversation it belongs to; a run on its own says none.
func TestBuildNamesTheConversation(t *testing.T) {
	run := &exagentv1.AgentRun{}
	run.Namespace, run.Name = "ns", "support-t2"
	run.Spec.AgentRef.Name = "ops"
	run.Status.Phase = exagentv1.PhaseSucceeded
	if d := Build(run, nil, Event{Kind: exagentv1.NotifyRunEnded}); d.Run.Conversation != "" {
		t.Errorf("a run on its own names conversation %q", d.Run.Conversation)
	}
	run.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "support"}
	if d := Build(run, nil, Event{Kind: exagentv1.NotifyRunEnded}); d.Run.Conversation != "support" {
		t.Errorf("a turn's notification names conversation %q, want support", d.Run.Conversation)
	}
}
