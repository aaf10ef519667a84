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

package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestResolveConversationRetention(t *testing.T) {
	sink := &exagentv1.NotifySink{Name: "s3", URL: "https://archive.example/runs"}
	own := &exagentv1.ConversationRetention{TTL: &metav1.Duration{Duration: 90 * time.Minute}}
	tests := map[string]struct {
		conv       *exagentv1.ConversationRetention
		agent      *exagentv1.RetentionSpec
		manager    time.Duration
		wantTTL    *time.Duration
		wantSource TTLSource
		wantArc    bool
	}{
		"nothing set: kept":          {conv: &exagentv1.ConversationRetention{}},
		"the manager's default":      {manager: time.Hour, wantTTL: ptr.To(time.Hour), wantSource: TTLFromManager},
		"the Agent's beats the flag": {agent: &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](60)}, manager: time.Hour, wantTTL: ptr.To(time.Minute), wantSource: TTLFromAgent},
		"its own beats the Agent's": {conv: own, agent: &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0), Archive: sink},
			wantTTL: ptr.To(90 * time.Minute), wantSource: TTLFromConversation, wantArc: true},
		"0 on the Agent: idle is due at once": {agent: &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0)},
			wantTTL: ptr.To(time.Duration(0)), wantSource: TTLFromAgent},
		"a gone Agent: its own TTL, no archive": {conv: own, wantTTL: ptr.To(90 * time.Minute), wantSource: TTLFromConversation},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ResolveConversationRetention(tc.conv, tc.agent, tc.manager)
			if diff := cmp.Diff(tc.wantTTL, got.TTL); diff != "" {
				t.Errorf("TTL (-want +got):\n%s", diff)
			}
			if got.TTLSource != tc.wantSource {
				t.Errorf("source = %q, want %q", got.TTLSource, tc.wantSource)
			}
			if (got.Archive != nil) != tc.wantArc {
				t.Errorf("archive = %v, want set %v", got.Archive, tc.wantArc)
			}
		})
	}
}

func TestConversationReapable(t *testing.T) {
	hour := Retention{TTL: ptr.To(time.Hour), TTLSource: TTLFromConversation}
	endedAt := func(at time.Time) []metav1.Condition {
		return []metav1.Condition{{Type: exagentv1.ConditionEnded, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	}
	turn := func(name string, ended time.Time, mutate ...func(*ConversationTurn)) ConversationTurn {
		tr := ConversationTurn{Name: name, Created: t0, Status: &Status{Phase: exagentv1.PhaseSucceeded, Conditions: endedAt(ended)}}
		for _, m := range mutate {
			m(&tr)
		}
		return tr
	}
	three := func(mutate ...func(*ConversationTurn)) []ConversationTurn {
		return []ConversationTurn{turn("t1", t0), turn("t2", t0.Add(time.Minute)), turn("t3", t0.Add(2*time.Minute), mutate...)}
	}
	uncertain := func(started time.Time, outcome bool) func(*ConversationTurn) {
		return func(tr *ConversationTurn) {
			tr.Status.Phase = exagentv1.PhaseCancelled
			c := exagentv1.ToolCall{ID: "c1", Tool: "pay", State: exagentv1.CallUncertain, StartedAt: ptr.To(metav1.NewMicroTime(started))}
			if outcome {
				c.Outcome = &exagentv1.CallOutcome{}
			}
			tr.Status.Calls = []exagentv1.ToolCall{c}
		}
	}
	due := t0.Add(2*time.Minute + time.Hour)
	tests := map[string]struct {
		c          ConversationState
		r          Retention
		byKeepLast bool
		now        time.Time
		running    bool
		want       ConversationDecision
		wantWhy    string
	}{
		"no turn: never": {
			c: ConversationState{}, r: hour, now: due.Add(1000 * time.Hour), wantWhy: "no turn"},
		"a turn open: never, its end brings it back": {
			c: ConversationState{Open: "t3", Turns: three()}, r: hour, now: due, wantWhy: "turn t3 is open"},
		"a turn still running (the status not yet written)": {
			c: ConversationState{Turns: three(func(tr *ConversationTurn) { tr.Status.Phase = exagentv1.PhaseAwaitingApproval })},
			r: hour, now: due, wantWhy: "turn t3 is AwaitingApproval"},
		"an Uncertain call holds it past the late window": {
			c: ConversationState{Turns: three(uncertain(t0, false))}, r: hour, now: due.Add(24 * time.Hour), wantWhy: "outcome is unknown"},
		"an Uncertain call with its late outcome still holds the queue": {
			c: ConversationState{Turns: three(uncertain(t0, true))}, r: hour, now: due, wantWhy: "outcome is unknown"},
		"no TTL and no keepLast: kept": {
			c: ConversationState{Turns: three()}, r: Retention{}, now: due.Add(1000 * time.Hour), wantWhy: "no TTL"},
		"before the TTL: looked at again when it passes": {
			c: ConversationState{Turns: three()}, r: hour, now: due.Add(-time.Second),
			want: ConversationDecision{Until: due}, wantWhy: "passes at"},
		"the TTL counts from the newest turn's end": {
			c: ConversationState{Turns: three()}, r: hour, now: due, want: ConversationDecision{Reap: true}},
		"status.lastTurnEndedAt later than the turns read: counted from it": {
			c: ConversationState{LastTurnEndedAt: due, Turns: three()}, r: hour, now: due,
			want: ConversationDecision{Until: due.Add(time.Hour)}, wantWhy: "passes at"},
		"TTL 0: due as soon as idle": {
			c: ConversationState{Turns: three()}, r: Retention{TTL: ptr.To(time.Duration(0))}, now: t0.Add(2 * time.Minute),
			want: ConversationDecision{Reap: true}},
		"keepLast lets it go whatever the TTL": {
			c: ConversationState{Turns: three()}, r: hour, byKeepLast: true, now: t0.Add(3 * time.Minute), want: ConversationDecision{Reap: true}},
		"keepLast never takes one with a turn open": {
			c: ConversationState{Open: "t2", Turns: three()}, byKeepLast: true, now: due, wantWhy: "open"},
		"forked by another conversation: kept while the fork exists": {
			c: ConversationState{ForkedBy: "branch", Turns: three()}, r: hour, byKeepLast: true, now: due, wantWhy: "conversation branch forks it"},
		"a GitOps-managed conversation: kept, said": {
			c: ConversationState{GitOps: "Argo CD", Turns: three()}, r: hour, now: due,
			want: ConversationDecision{GitOps: true}, wantWhy: "Argo CD manages the conversation"},
		"a GitOps-managed turn: kept, said": {
			c: ConversationState{Turns: three(func(tr *ConversationTurn) { tr.GitOps = "Flux" })}, r: hour, byKeepLast: true, now: due,
			want: ConversationDecision{GitOps: true}, wantWhy: "Flux manages its turn t3"},
		"a pending notification of a turn: its journal brings it back": {
			c: ConversationState{Turns: three(func(tr *ConversationTurn) {
				tr.Status.Notifications = []exagentv1.NotificationRecord{{Event: "RunEnded", Sink: "chat", State: exagentv1.NotificationPending}}
			})}, r: hour, now: due, wantWhy: "turn t3: notification RunEnded"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ConversationReapable(tc.c, tc.r, tc.byKeepLast, tc.now, 10*time.Minute)
			if !strings.Contains(got.Why, tc.wantWhy) || (tc.wantWhy == "") != (got.Why == "") {
				t.Errorf("why = %q, want it to say %q", got.Why, tc.wantWhy)
			}
			got.Why = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConversationReapableRunningTurn: a turn whose IO still runs in this
// process holds its conversation (Reapable's running) however late.
func TestConversationReapableRunningTurn(t *testing.T) {
	st := &Status{Phase: exagentv1.PhaseCancelled, Conditions: []metav1.Condition{{Type: exagentv1.ConditionEnded, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}},
		Calls: []exagentv1.ToolCall{{ID: "c1", Tool: "pay", State: exagentv1.CallFailed}}}
	c := ConversationState{Turns: []ConversationTurn{{Name: "t1", Created: t0, Status: st, Running: true}}}
	if got := ConversationReapable(c, Retention{TTL: ptr.To(time.Duration(0))}, false, t0.Add(time.Hour), time.Minute); !got.Reap {
		t.Errorf("a turn with no Uncertain call is reaped whatever runs: %+v", got)
	}
}

func TestIdleConversation(t *testing.T) {
	at := metav1.NewTime(t0)
	turns := []exagentv1.Turn{{Index: 1, Run: "t1"}}
	tests := map[string]struct {
		s      exagentv1.ConversationStatus
		wantOK bool
	}{
		"idle":              {s: exagentv1.ConversationStatus{Turns: turns, LastTurnEndedAt: &at}, wantOK: true},
		"a turn open":       {s: exagentv1.ConversationStatus{Turns: turns, LastTurnEndedAt: &at, Open: "t2"}},
		"no turn ended yet": {s: exagentv1.ConversationStatus{Turns: turns, Open: "t1"}},
		"no turns":          {s: exagentv1.ConversationStatus{LastTurnEndedAt: &at}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := IdleConversation(&tc.s)
			if ok != tc.wantOK || (ok && !got.Equal(t0)) {
				t.Errorf("IdleConversation = %v, %v; want %v", got, ok, tc.wantOK)
			}
		})
	}
}

func TestKeepLastConversations(t *testing.T) {
	convs := []IdleConv{
		{Name: "b", Since: t0.Add(time.Minute)},
		{Name: "old", Since: t0},
		{Name: "a", Since: t0.Add(time.Minute)}, // same time as b: name decides (b is "newer")
		{Name: "new", Since: t0.Add(time.Hour)},
	}
	tests := map[string]struct {
		keep int
		want []int
	}{
		"keep all":          {keep: 4},
		"keep more":         {keep: 10},
		"keep 2":            {keep: 2, want: []int{1, 2}},
		"keep 1":            {keep: 1, want: []int{0, 1, 2}},
		"keep 0: every one": {keep: 0, want: []int{0, 1, 2, 3}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, KeepLastConversations(convs, tc.keep)); diff != "" {
				t.Errorf("beyond keepLast (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTurnArchiveDigest(t *testing.T) {
	base := TurnArchive{Conversation: "c", ConversationUID: "u", Turn: 1, Turns: 3}
	d := TurnArchiveDigest("sha256:run", base)
	if !strings.HasPrefix(d, "sha256:") || d != TurnArchiveDigest("sha256:run", base) {
		t.Fatalf("digest %q is not a stable sha256", d)
	}
	for name, other := range map[string]struct {
		run string
		t   TurnArchive
	}{
		"the run moved":        {"sha256:other", base},
		"a turn more":          {"sha256:run", TurnArchive{Conversation: "c", ConversationUID: "u", Turn: 1, Turns: 4}},
		"another place":        {"sha256:run", TurnArchive{Conversation: "c", ConversationUID: "u", Turn: 2, Turns: 3}},
		"another conversation": {"sha256:run", TurnArchive{Conversation: "c", ConversationUID: "v", Turn: 1, Turns: 3}},
	} {
		if TurnArchiveDigest(other.run, other.t) == d {
			t.Errorf("%s: the digest did not change", name)
		}
	}
}
