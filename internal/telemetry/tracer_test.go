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

package telemetry

import (
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestAttemptWhoseClaimCommitWasNotSeen: the commit that claimed the run
// landed but its answer was lost, so the observer never saw it; the
// owner's next commit starts the attempt's span and its end closes it.
func TestAttemptWhoseClaimCommitWasNotSeen(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(NewProvider(sdktrace.WithSpanProcessor(rec)))
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	owned := func(step int32) *exagentv1.AgentRunStatus {
		return &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Traceparent: tp, Attempts: 2,
			Cursor: exagentv1.Cursor{Step: step},
			Claim:  &exagentv1.Claim{Holder: "me", Attempt: 2, LeaseExpiresAt: metav1.NewMicroTime(now.Add(time.Minute))}}
	}
	// Running → Running: the claim (Approved → Running) was never observed.
	tr.Committed(key, "a", "", owned(0), owned(1), "me", now)
	ended := &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded, Traceparent: tp, Attempts: 2}
	tr.Committed(key, "a", "", owned(1), ended, "me", now.Add(time.Second))
	n := 0
	for _, s := range rec.Ended() {
		if s.Name() == "invoke_agent a" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("ended attempt spans = %d, want 1 (the attempt is traced although its claim commit was not seen)", n)
	}
}

// TestOpenAttemptsAreBounded: the open attempt spans are per-run memory.
// Past the bound, the least recently traced attempt's span is ended with
// reason SpanEvicted to make room (never kept, never silently dropped
// open), and an attempt that keeps working is not the one evicted.
func TestOpenAttemptsAreBounded(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := newTracer(NewProvider(sdktrace.WithSpanProcessor(rec)), 4)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(key types.NamespacedName) {
		tr.Committed(key, "a", "", &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseQueued, Traceparent: testTraceparent}, owned(now), "me", now)
	}
	busy := types.NamespacedName{Namespace: "ns", Name: "busy"}
	claim(busy)
	for i := range 20 {
		claim(types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("r", i)})
		// The busy run's attempt works between claims (a tool call).
		_, end := tr.StartTool(t.Context(), busy, 2, "t", "http", "c")
		end("Succeeded", nil)
	}
	if got := tr.Open(); got != 4 {
		t.Fatalf("open attempt spans = %d, want the bound 4", got)
	}
	evicted := 0
	for _, s := range rec.Ended() {
		if s.Name() != "invoke_agent a" {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == attrReason && kv.Value.AsString() == reasonSpanEvicted {
				evicted++
			}
			if kv.Key == attrRun && kv.Value.AsString() == "busy" {
				t.Errorf("the busy run's attempt span was evicted")
			}
		}
	}
	if evicted != 21-4 {
		t.Errorf("attempt spans ended as evicted = %d, want %d", evicted, 21-4)
	}
}

// TestForgetEndsTheSpanOfADeletedRun: a run deleted while this process
// owns an attempt never gets the commit that releases it; Forget (called
// when the run is found gone) ends its span, with reason RunDeleted.
func TestForgetEndsTheSpanOfADeletedRun(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(NewProvider(sdktrace.WithSpanProcessor(rec)))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "ns", Name: "gone"}
	tr.Committed(key, "a", "", &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseQueued, Traceparent: testTraceparent}, owned(now), "me", now)
	if got := tr.Open(); got != 1 {
		t.Fatalf("open attempt spans = %d, want 1", got)
	}
	tr.Forget(key, now.Add(time.Second))
	if got := tr.Open(); got != 0 {
		t.Fatalf("open attempt spans after Forget = %d, want 0", got)
	}
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Name() != "invoke_agent a" {
		t.Fatalf("ended spans = %d, want the attempt's", len(ended))
	}
	found := false
	for _, kv := range ended[0].Attributes() {
		found = found || (kv.Key == attrReason && kv.Value.AsString() == reasonRunDeleted)
	}
	if !found {
		t.Errorf("the attempt span of a deleted run has no %s=%s", attrReason, reasonRunDeleted)
	}
	tr.Forget(key, now) // twice, or for a run never traced: nothing
}

const testTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// owned is a status of attempt 2 held by "me".
func owned(now time.Time) *exagentv1.AgentRunStatus {
	return &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Traceparent: testTraceparent, Attempts: 2,
		Claim: &exagentv1.Claim{Holder: "me", Attempt: 2, LeaseExpiresAt: metav1.NewMicroTime(now.Add(time.Minute))}}
}

// TestTurnSpanCarriesTheConversation: a turn's attempt span says which
// conversation it belongs to (gen_ai.conversation.id is the
// Conversation's, not the run's); a run on its own is its own.
func TestTurnSpanCarriesTheConversation(t *testing.T) {
	for conversation, want := range map[string]string{"support": "ns/support", "": "ns/r"} {
		rec := tracetest.NewSpanRecorder()
		tr := New(NewProvider(sdktrace.WithSpanProcessor(rec)))
		key := types.NamespacedName{Namespace: "ns", Name: "r"}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		owned := &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Traceparent: tp, Attempts: 1,
			Claim: &exagentv1.Claim{Holder: "me", Attempt: 1, LeaseExpiresAt: metav1.NewMicroTime(now.Add(time.Minute))}}
		tr.Committed(key, "a", conversation, &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseQueued, Traceparent: tp}, owned, "me", now)
		got := ""
		for _, s := range rec.Started() {
			for _, kv := range s.Attributes() {
				if kv.Key == "gen_ai.conversation.id" {
					got = kv.Value.AsString()
				}
			}
		}
		if got != want {
			t.Errorf("conversation %q: gen_ai.conversation.id = %q, want %q", conversation, got, want)
		}
	}
}
