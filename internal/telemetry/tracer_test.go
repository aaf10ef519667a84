package telemetry

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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
	tr.Committed(key, "a", owned(0), owned(1), "me", now)
	ended := &exagentv1.AgentRunStatus{Phase: exagentv1.PhaseSucceeded, Traceparent: tp, Attempts: 2}
	tr.Committed(key, "a", owned(1), ended, "me", now.Add(time.Second))
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
