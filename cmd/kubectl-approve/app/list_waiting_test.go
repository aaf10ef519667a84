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
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// waitingSample is a Waiting run of agent "ops" whose calls wait as given.
func waitingSample(name string, phase exagentv1.RunPhase, waits ...exagentv1.CallWait) exagentv1.AgentRun {
	r := exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "prod"},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "ops"}}}
	r.Status.Phase = phase
	for i, w := range waits {
		r.Status.Calls = append(r.Status.Calls, exagentv1.ToolCall{ID: fmt.Sprintf("c%d", i+1), Tool: "wait",
			State: exagentv1.CallStarted, Wait: &w})
	}
	// A closed call of the step is not listed.
	r.Status.Calls = append(r.Status.Calls, exagentv1.ToolCall{ID: "done", Tool: "get", State: exagentv1.CallSucceeded})
	return r
}

func TestWaitingRunsListed(t *testing.T) {
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(now.Add(d)) }
	runs := []exagentv1.AgentRun{
		waitingSample("nightly", exagentv1.PhaseWaiting, exagentv1.CallWait{Kind: exagentv1.WaitTimer, Since: at(-time.Hour), Until: at(2 * time.Hour)}),
		waitingSample("rollout", exagentv1.PhaseWaiting, exagentv1.CallWait{Kind: exagentv1.WaitObject, Since: at(0), Until: at(10 * time.Minute),
			Object: &exagentv1.WaitedObject{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web", Condition: "Available=True"}}),
		waitingSample("ticket", exagentv1.PhaseWaiting, exagentv1.CallWait{Kind: exagentv1.WaitCallback, Since: at(0), Until: at(-time.Second), Callback: "cb-1"}),
		// Another phase with a call that still has a wait journaled (a run
		// that paused for an approval meanwhile) is not a Waiting run.
		waitingSample("paused", exagentv1.PhaseAwaitingApproval, exagentv1.CallWait{Kind: exagentv1.WaitTimer, Since: at(0), Until: at(time.Hour)}),
	}
	waits := waitsOf(runs)
	var got []string
	for _, w := range waits {
		got = append(got, w.Run+"/"+w.Call)
	}
	if diff := cmp.Diff([]string{"ticket/c1", "rollout/c1", "nightly/c1"}, got); diff != "" {
		t.Fatalf("waiting calls, soonest first (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := printWaiting(&out, waits, now, true, false); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"waiting: prod/ticket c1 (wait) Callback callback cb-1 until 2026-03-04T09:59:59Z (due)",
		"waiting: prod/rollout c1 (wait) Object Deployment prod/web Available=True until 2026-03-04T10:10:00Z (in 10m0s)",
		"waiting: prod/nightly c1 (wait) Timer until 2026-03-04T12:00:00Z (in 2h0m0s)",
	}, "\n") + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// Past maxWaitingLines the rest is counted, not printed.
func TestWaitingLinesBounded(t *testing.T) {
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	var waits []waitingRun
	for i := range maxWaitingLines + 5 {
		waits = append(waits, waitingRun{Namespace: "prod", Run: fmt.Sprintf("r%d", i), Call: "c1", Tool: "nap", Kind: "Timer", Until: now.Add(time.Hour)})
	}
	var out bytes.Buffer
	if err := printWaiting(&out, waits, now, false, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != maxWaitingLines+2 || lines[0] != "" || lines[len(lines)-1] != "… and 5 more waiting calls (kubectl approve list --waiting -o json)" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
