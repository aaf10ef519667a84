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

package controllers_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// TestPausedUnderTheOldShapeResumes: a run paused by a manager from
// before issue 27 carries the seven conditions it reported then (the four
// that said nothing among them) in a status the CRD now keeps schemaless;
// today's manager resumes it after the approval, runs its call once, and
// its next writes drop the silent conditions.
func TestPausedUnderTheOldShapeResumes(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.createAgent("payments", refundAgent(ts))
	m := h.startManager(controllers.Options{})
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	m.stop()

	// The old manager's seven conditions of a paused run: Uncertain False,
	// Succeeded Unknown and Stalled False beside Ready, AwaitingApproval,
	// Ended and Reconciling.
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	for _, c := range []metav1.Condition{
		{Type: exagentv1.ConditionUncertain, Status: metav1.ConditionFalse, Reason: exagentv1.ReasonNoUncertainCall, Message: "every started call has an outcome"},
		{Type: exagentv1.ConditionSucceeded, Status: metav1.ConditionUnknown, Reason: exagentv1.ReasonNotEnded, Message: "the run is AwaitingApproval"},
		{Type: exagentv1.ConditionStalled, Status: metav1.ConditionFalse, Reason: exagentv1.ReasonNotEnded, Message: "the run is AwaitingApproval"},
	} {
		c.ObservedGeneration, c.LastTransitionTime = paused.Generation, old
		meta.SetStatusCondition(&paused.Status.Conditions, c)
	}
	if err := env().Client.Status().Update(context.Background(), paused); err != nil {
		t.Fatalf("writing the old shape: %v", err)
	}
	if n := len(paused.Status.Conditions); n != 7 {
		t.Fatalf("the old-shape run has %d conditions, want the old seven (%+v)", n, paused.Status.Conditions)
	}

	h.startManager(controllers.Options{})
	h.approve(paused, "ok")
	done := h.waitPhase("r1", exagentv1.PhaseSucceeded)
	if got := len(ts.journal()); got != 1 {
		t.Errorf("refunds = %d, want 1", got)
	}
	var types []string
	for _, c := range done.Status.Conditions {
		types = append(types, c.Type+"="+string(c.Status))
	}
	want := []string{"Ready=True", "Ended=True", "Succeeded=True"}
	if len(types) != len(want) {
		t.Fatalf("conditions after the resume = %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Errorf("conditions after the resume = %v, want %v", types, want)
			break
		}
	}
}
