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

func TestResolveRetention(t *testing.T) {
	sink := &exagentv1.NotifySink{Name: "s3", URL: "https://archive.example/runs"}
	tests := map[string]struct {
		run     *int32
		agent   *exagentv1.RetentionSpec
		manager time.Duration
		wantTTL *time.Duration
		wantArc bool
	}{
		"nothing set: kept":                 {},
		"the manager's default":             {manager: time.Hour, wantTTL: ptr.To(time.Hour)},
		"the Agent's TTL beats the manager": {agent: &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](60)}, manager: time.Hour, wantTTL: ptr.To(time.Minute)},
		"the run's TTL beats the Agent's": {run: ptr.To[int32](5), agent: &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](60)},
			wantTTL: ptr.To(5 * time.Second)},
		"0 on the run deletes at once, whatever the Agent says": {run: ptr.To[int32](0), agent: &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](60)},
			wantTTL: ptr.To(time.Duration(0))},
		"0 on the Agent deletes at once": {agent: &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0)}, manager: time.Hour,
			wantTTL: ptr.To(time.Duration(0))},
		"the Agent's archive comes along":             {agent: &exagentv1.RetentionSpec{Archive: sink}, wantArc: true},
		"a gone Agent: the run's own TTL, no archive": {run: ptr.To[int32](7), wantTTL: ptr.To(7 * time.Second)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ResolveRetention(&exagentv1.AgentRunSpec{TTLSecondsAfterFinished: tc.run}, tc.agent, tc.manager)
			if diff := cmp.Diff(tc.wantTTL, got.TTL); diff != "" {
				t.Errorf("TTL (-want +got):\n%s", diff)
			}
			if (got.Archive != nil) != tc.wantArc {
				t.Errorf("archive = %v, want set %v", got.Archive, tc.wantArc)
			}
		})
	}
}

func TestTTLExpiry(t *testing.T) {
	created := t0.Add(-time.Hour)
	ended := func(phase exagentv1.RunPhase, conds ...metav1.Condition) *Status {
		return &Status{Phase: phase, Conditions: conds}
	}
	cond := func(typ string, st metav1.ConditionStatus, at time.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, LastTransitionTime: metav1.NewTime(at)}
	}
	ttl := Retention{TTL: ptr.To(30 * time.Second)}
	tests := map[string]struct {
		st     *Status
		r      Retention
		want   time.Time
		wantOK bool
	}{
		"counted from the Ended condition": {
			st: ended(exagentv1.PhaseSucceeded, cond(exagentv1.ConditionReady, metav1.ConditionTrue, t0.Add(time.Minute)),
				cond(exagentv1.ConditionEnded, metav1.ConditionTrue, t0)),
			r: ttl, want: t0.Add(30 * time.Second), wantOK: true,
		},
		"an older manager's run: its latest transition": {
			st: ended(exagentv1.PhaseFailed, cond(exagentv1.ConditionReady, metav1.ConditionFalse, t0.Add(-time.Minute)),
				cond(exagentv1.ConditionUncertain, metav1.ConditionFalse, t0)),
			r: ttl, want: t0.Add(30 * time.Second), wantOK: true,
		},
		"no conditions at all: its creation": {st: ended(exagentv1.PhaseCancelled), r: ttl, want: created.Add(30 * time.Second), wantOK: true},
		"a run that goes on has no expiry": {
			st: ended(exagentv1.PhaseAwaitingApproval, cond(exagentv1.ConditionEnded, metav1.ConditionFalse, t0)), r: ttl,
		},
		"Uncertain has not ended": {st: ended(exagentv1.PhaseUncertain), r: ttl},
		"no TTL: never":           {st: ended(exagentv1.PhaseSucceeded, cond(exagentv1.ConditionEnded, metav1.ConditionTrue, t0))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := TTLExpiry(tc.st, created, tc.r)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("TTLExpiry = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestReapable(t *testing.T) {
	started := metav1.NewMicroTime(t0.Add(-time.Minute))
	cancelledWith := func(c exagentv1.ToolCall) Status {
		return Status{Phase: exagentv1.PhaseCancelled, Calls: []exagentv1.ToolCall{c}}
	}
	tests := map[string]struct {
		st        Status
		running   bool
		want      bool
		wantUntil time.Time
	}{
		"cancelled with a call in flight, within the window": {
			st:        cancelledWith(exagentv1.ToolCall{ID: "c1", Tool: "pay", State: exagentv1.CallUncertain, StartedAt: &started}),
			wantUntil: started.Add(10 * time.Minute),
		},
		"cancelled with a call whose IO still runs here, past the window": {
			st:      cancelledWith(exagentv1.ToolCall{ID: "c1", Tool: "pay", State: exagentv1.CallUncertain, StartedAt: ptr.To(metav1.NewMicroTime(t0.Add(-time.Hour)))}),
			running: true,
		},
		"cancelled, the call's window passed and nothing runs": {
			st:   cancelledWith(exagentv1.ToolCall{ID: "c1", Tool: "pay", State: exagentv1.CallUncertain, StartedAt: ptr.To(metav1.NewMicroTime(t0.Add(-time.Hour)))}),
			want: true,
		},
		"cancelled, the late outcome journaled": {
			st: cancelledWith(exagentv1.ToolCall{ID: "c1", Tool: "pay", State: exagentv1.CallSucceeded, StartedAt: &started,
				Outcome: &exagentv1.CallOutcome{}}),
			want: true,
		},
		"cancelled, resolved for the record": {
			st:   cancelledWith(exagentv1.ToolCall{ID: "c1", Tool: "pay", State: exagentv1.CallUncertain, StartedAt: &started, Outcome: &exagentv1.CallOutcome{}}),
			want: true,
		},
		"a delegation call: its child is the outcome": {
			st:   cancelledWith(exagentv1.ToolCall{ID: "c1", Tool: "helper", State: exagentv1.CallUncertain, StartedAt: &started, Child: "r-c1"}),
			want: true,
		},
		"ended, nothing pending": {st: Status{Phase: exagentv1.PhaseSucceeded, Notifications: []exagentv1.NotificationRecord{
			{Event: exagentv1.NotifyRunEnded, State: exagentv1.NotificationDelivered}, {Event: exagentv1.NotifyApprovalRequested, State: exagentv1.NotificationFailed}}}, want: true},
		"its RunEnded is still to be sent": {st: Status{Phase: exagentv1.PhaseFailed, Notifications: []exagentv1.NotificationRecord{
			{Event: exagentv1.NotifyRunEnded, State: exagentv1.NotificationPending, Sink: "oncall"}}}},
		"waiting for a human": {st: Status{Phase: exagentv1.PhaseAwaitingApproval}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, why, until := Reapable(&tc.st, t0, 10*time.Minute, tc.running)
			if got != tc.want || (!got && why == "") || !until.Equal(tc.wantUntil) {
				t.Errorf("Reapable = %v (%q) until %v, want %v with a reason when false, until %v", got, why, until, tc.want, tc.wantUntil)
			}
		})
	}
}

func TestBeyondKeepLast(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	runs := []EndedRun{
		{Name: "a", Created: at(0), Ended: at(10)},
		{Name: "b", Created: at(1), Ended: at(30)},
		{Name: "c", Created: at(2), Ended: at(20)},
		{Name: "d", Created: at(3), Ended: at(30)}, // ended with b: created later, so newer
		{Name: "e", Created: at(3), Ended: at(30)}, // and with d: the name decides
	}
	tests := map[string]struct {
		keep int
		want []int
	}{
		"keep 0: every one goes":         {keep: 0, want: []int{0, 1, 2, 3, 4}},
		"keep 1: the newest stays":       {keep: 1, want: []int{0, 1, 2, 3}},
		"keep 3: by end, creation, name": {keep: 3, want: []int{0, 2}},
		"keep 4":                         {keep: 4, want: []int{0}},
		"keep as many as there are":      {keep: 5},
		"keep more":                      {keep: 50},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, BeyondKeepLast(runs, tc.keep)); diff != "" {
				t.Errorf("BeyondKeepLast (-want +got):\n%s", diff)
			}
		})
	}
}

// TestArchiveJournal: each attempt is journaled with the same id; a
// failure keeps the record Pending with its error and backs off 1s
// doubling to 5m, without end; Archived is a view of the record.
func TestArchiveJournal(t *testing.T) {
	st := Status{Phase: exagentv1.PhaseSucceeded}
	retry := ArchiveRetry{}.WithDefaults()
	id := ArchiveAttemptID(st.Archive, runUID, "sha256:aaaa")
	attempt := func(failure string) ArchiveAttempt {
		return ArchiveAttempt{ID: id, Digest: "sha256:aaaa", Sink: "s3", Failure: failure}
	}
	if at := retry.NextAttempt(st.Archive, id); !at.IsZero() {
		t.Fatalf("a run never archived waits until %v, want at once", at)
	}
	st = RecordArchiveAttempt(st, attempt("POST https://archive.example: HTTP 503"), t0)
	want := &exagentv1.ArchiveRecord{ID: runUID + ".run-archived", Sink: "s3", Digest: "sha256:aaaa", State: exagentv1.ArchivePending, Attempts: 1,
		FirstAttemptAt: ptr.To(metav1.NewTime(t0)), LastAttemptAt: ptr.To(metav1.NewTime(t0)), LastError: "POST https://archive.example: HTTP 503"}
	if diff := cmp.Diff(want, st.Archive); diff != "" {
		t.Fatalf("after a failure (-want +got):\n%s", diff)
	}
	if got := retry.NextAttempt(st.Archive, id); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("next attempt after 1 failure at %v, want %v", got, t0.Add(time.Second))
	}
	conds := Conditions(st, 1, t0)
	archived := findCondition(conds, exagentv1.ConditionArchived)
	if archived == nil || archived.Status != metav1.ConditionFalse || archived.Reason != exagentv1.ReasonArchiveSinkFailing {
		t.Fatalf("Archived condition of a held run = %+v, want False %s", archived, exagentv1.ReasonArchiveSinkFailing)
	}
	for i := 2; i <= 12; i++ {
		st = RecordArchiveAttempt(st, attempt("connection refused"), t0)
	}
	if got := retry.NextAttempt(st.Archive, id).Sub(t0); got != 5*time.Minute {
		t.Errorf("backoff after 12 failures = %v, want the 5m cap", got)
	}
	if ArchiveAttemptID(st.Archive, runUID, "sha256:aaaa") != id {
		t.Errorf("the id moved between attempts of the same content")
	}
	st = RecordArchiveAttempt(st, attempt(""), t0.Add(time.Hour))
	if st.Archive.State != exagentv1.ArchiveDelivered || st.Archive.LastError != "" || st.Archive.Attempts != 13 ||
		st.Archive.ID != runUID+".run-archived" || !st.Archive.FirstAttemptAt.Equal(ptr.To(metav1.NewTime(t0))) {
		t.Errorf("after the 2xx: %+v", st.Archive)
	}
	if c := findCondition(Conditions(st, 1, t0), exagentv1.ConditionArchived); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Archived condition once delivered = %+v, want True", c)
	}
	if c := findCondition(Conditions(Status{Phase: exagentv1.PhaseSucceeded}, 1, t0), exagentv1.ConditionArchived); c != nil {
		t.Errorf("a run retention never archived has condition %+v, want none", c)
	}
}

// TestArchiveCoversOnlyWhatWasSent: a delivered archive covers the run
// only while its content is the one sent; content written after it (a
// late outcome) is not covered, and its archive is a new record under a
// new id (a sink deduping on the id keeps it), attempted at once.
func TestArchiveCoversOnlyWhatWasSent(t *testing.T) {
	spec := &exagentv1.AgentRunSpec{Input: "pay"}
	st := Status{Phase: exagentv1.PhaseCancelled, Calls: []exagentv1.ToolCall{{ID: "c1", Tool: "pay", State: exagentv1.CallUncertain}}}
	d1 := ArchiveDigest(nil, nil, spec, &st)
	id1 := ArchiveAttemptID(st.Archive, runUID, d1)
	st = RecordArchiveAttempt(st, ArchiveAttempt{ID: id1, Digest: d1, Sink: "s3"}, t0)
	if d := ArchiveDigest(nil, nil, spec, &st); d != d1 || !ArchiveCovers(st.Archive, d) {
		t.Fatalf("the journal of the archive moved the digest (%s → %s) or does not cover it", d1, d)
	}
	st.Conditions = Conditions(st, 1, t0)
	if !ArchiveCovers(st.Archive, ArchiveDigest(nil, nil, spec, &st)) {
		t.Fatal("conditions moved the digest")
	}

	st.Calls[0].State, st.Calls[0].Outcome = exagentv1.CallSucceeded, &exagentv1.CallOutcome{Result: "paid"} // the late outcome
	d2 := ArchiveDigest(nil, nil, spec, &st)
	if ArchiveCovers(st.Archive, d2) {
		t.Fatal("an archive sent before the late outcome covers the run after it")
	}
	id2 := ArchiveAttemptID(st.Archive, runUID, d2)
	if id2 == id1 || !strings.HasPrefix(id2, ArchiveID(runUID)+".") {
		t.Fatalf("id of the moved content = %q, want a new one after %q", id2, id1)
	}
	if at := (ArchiveRetry{}).NextAttempt(st.Archive, id2); !at.IsZero() {
		t.Errorf("moved content waits until %v, want at once", at)
	}
	st = RecordArchiveAttempt(st, ArchiveAttempt{ID: id2, Digest: d2, Sink: "s3", Failure: "HTTP 503"}, t0.Add(time.Minute))
	if st.Archive.ID != id2 || st.Archive.Attempts != 1 || ArchiveCovers(st.Archive, d2) {
		t.Errorf("after a failed attempt of the moved content: %+v", st.Archive)
	}
	if got := ArchiveAttemptID(st.Archive, runUID, d2); got != id2 {
		t.Errorf("the retry of the moved content has id %q, want %q again", got, id2)
	}
	legacy := &exagentv1.ArchiveRecord{ID: ArchiveID(runUID), State: exagentv1.ArchiveDelivered}
	if ArchiveCovers(legacy, d2) {
		t.Error("a delivered record without a digest covers the run")
	}
}

// TestKeptFromGitOps: a run an Argo CD or Flux mark says is declared in a
// GitOps source is never deleted by retention — not by a default, not by
// keepLast, not by its own TTL (set before a GitOps tool adopted it); a run
// without a mark is not concerned.
func TestKeptFromGitOps(t *testing.T) {
	agentTTL := ResolveRetention(&exagentv1.AgentRunSpec{}, &exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](60)}, 0)
	ownTTL := ResolveRetention(&exagentv1.AgentRunSpec{TTLSecondsAfterFinished: ptr.To[int32](60)}, nil, time.Hour)
	managerTTL := ResolveRetention(&exagentv1.AgentRunSpec{}, nil, time.Hour)
	tests := map[string]struct {
		labels, annotations map[string]string
		r                   Retention
		keepLast            bool
		want                string // substring of the reason; empty: not kept
	}{
		"argo annotation, agent TTL":   {annotations: map[string]string{"argocd.argoproj.io/tracking-id": "app:exagent.io/AgentRun:ns/r"}, r: agentTTL, want: "Argo CD manages it (annotation argocd.argoproj.io/tracking-id)"},
		"argo label, manager TTL":      {labels: map[string]string{"app.kubernetes.io/instance": "app"}, r: managerTTL, want: "--default-ttl-seconds-after-finished"},
		"flux kustomization, keepLast": {labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "runs"}, keepLast: true, want: "keepLast"},
		"flux helm, own TTL":           {labels: map[string]string{"helm.toolkit.fluxcd.io/name": "runs"}, r: ownTTL, want: "set before the GitOps tool adopted it"},
		"no mark":                      {labels: map[string]string{"team": "a"}, r: agentTTL},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			why, kept := KeptFromGitOps(tc.labels, tc.annotations, tc.r, tc.keepLast)
			if kept != (tc.want != "") || !strings.Contains(why, tc.want) {
				t.Errorf("KeptFromGitOps = %v %q, want kept %v with %q", kept, why, tc.want != "", tc.want)
			}
		})
	}
}
