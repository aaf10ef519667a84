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
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// sleeper is an Agent whose model sleeps for d, then answers "done".
func sleeper(d string, mutate ...func(*exagentv1.AgentSpec)) exagentv1.AgentSpec {
	spec := fixture.MakeAgent("sleeper", "").
		Script(fixture.CallTurn("nap", "nap", map[string]any{"duration": d}), fixture.TextTurn("done")).
		SleepTool("nap").Policy(exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}).Spec()
	for _, m := range mutate {
		m(spec)
	}
	return *spec
}

// poke wakes run's reconcile after the test moved the fake clock (a real
// clock's requeue would): the tests never wait for a requeue in real time.
func (h *harness) poke(clk *clocktesting.FakeClock, at time.Time, run string) {
	h.t.Helper()
	clk.SetTime(at)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.exagent.io/now":%q}}}`, at.Format(time.RFC3339Nano))
	r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: run}}
	if err := h.c.Patch(context.Background(), r, client.RawPatch(types.MergePatchType, patch)); err != nil {
		h.t.Fatalf("waking run %s: %v", run, err)
	}
}

// waitWaiting waits until run is Waiting and checks what a Waiting run
// must be: no claim, the call journaled with its wait, the condition.
func (h *harness) waitWaiting(run, call string, want time.Duration) *exagentv1.AgentRun {
	h.t.Helper()
	r := h.waitPhase(run, exagentv1.PhaseWaiting)
	if r.Status.Claim != nil {
		h.t.Errorf("a Waiting run holds a claim: %+v", r.Status.Claim)
	}
	c := r.Status.Call(call)
	if c == nil || c.State != exagentv1.CallStarted || c.Wait == nil || c.Wait.Kind != exagentv1.WaitTimer {
		h.t.Fatalf("call %s = %+v, want Started with a Timer wait", call, c)
	}
	if got := c.Wait.Until.Sub(c.Wait.Since.Time); got != want {
		h.t.Errorf("the wait lasts %s (since %s until %s), want %s", got, c.Wait.Since, c.Wait.Until, want)
	}
	cond := meta.FindStatusCondition(r.Status.Conditions, exagentv1.ConditionWaiting)
	if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, call) {
		h.t.Errorf("condition Waiting = %+v, want True naming the call %s", cond, call)
	}
	if r.Status.Reason != exagentv1.ReasonWaiting {
		h.t.Errorf("reason %q, want %q", r.Status.Reason, exagentv1.ReasonWaiting)
	}
	return r
}

// TestSleepWaitsWithoutAWorker: a run whose model calls Sleep {1h} goes
// Waiting with no claim, wakes when the (fake) clock reaches the hour, and
// its model sees what happened; the hour is not active time.
func TestSleepWaitsWithoutAWorker(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("sleeper", sleeper("1h"))
	h.createRun("r", "sleeper")
	w := h.waitWaiting("r", "nap", time.Hour)
	if h.eventNote("r", exagentv1.EventRunWaiting) == "" {
		t.Error("no RunWaiting Event")
	}
	if n := runsGauge(t, "exagent_waiting_calls", h.ns); n != 1 {
		t.Errorf("exagent_waiting_calls = %v while the run sleeps, want 1", n)
	}
	slept := waitCount(t, exagentv1.WaitTimer, exagentv1.CallSucceeded)

	h.poke(clk, w.Status.Call("nap").Wait.Until.Add(time.Second), "r")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	c := done.Status.Call("nap")
	if c.State != exagentv1.CallSucceeded || c.Outcome == nil || !strings.HasPrefix(c.Outcome.Result, "slept 1h0m1s (woke at ") {
		t.Fatalf("call nap = %s %+v, want Succeeded \"slept 1h0m1s (woke at …)\"", c.State, c.Outcome)
	}
	if l := done.Status.Ledger; l.ActiveTimeUsed.Duration >= time.Hour {
		t.Errorf("active time %s counts the hour the run slept", l.ActiveTimeUsed.Duration)
	}
	if h.eventNote("r", exagentv1.EventRunWoken) == "" {
		t.Error("no RunWoken Event")
	}
	if n := waitCount(t, exagentv1.WaitTimer, exagentv1.CallSucceeded); n != slept+1 {
		t.Errorf("exagent_wait_seconds{kind=Timer,outcome=Succeeded} counts %d waits, want %d", n, slept+1)
	}
	if n := runsGauge(t, "exagent_waiting_calls", h.ns); n != 0 {
		t.Errorf("exagent_waiting_calls = %v after the wake, want 0", n)
	}
}

// waitCount is how many waits of kind ended with outcome in this process
// (exagent_wait_seconds' count).
func waitCount(t *testing.T, kind exagentv1.WaitKind, outcome exagentv1.CallState) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "exagent_wait_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "kind") == string(kind) && label(m, "outcome") == string(outcome) {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// TestSleepingRunEnds: a Waiting run ends at once when cancelled, and
// Expired at its deadline; its waiting call fails (never Uncertain).
func TestSleepingRunEnds(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		h := newHarness(t)
		h.startManager(controllers.Options{})
		h.createAgent("sleeper", sleeper("5h"))
		h.createRun("r", "sleeper")
		h.waitWaiting("r", "nap", 5*time.Hour)
		h.cancelRun("r")
		c := h.get("r").Status.Call("nap")
		if c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, "the run ended while the call waited") {
			t.Fatalf("call nap after the cancel = %s %+v, want Failed: the run ended while the call waited", c.State, c.Outcome)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		h := newHarness(t)
		clk := clocktesting.NewFakeClock(time.Now())
		h.startManager(controllers.Options{Clock: clk})
		h.createAgent("sleeper", sleeper("5h"))
		deadline := clk.Now().Add(2 * time.Hour).Truncate(time.Second)
		h.createRun("r", "sleeper", func(s *exagentv1.AgentRunSpec) { s.Deadline = &metav1.Time{Time: deadline} })
		// The wait is cut to the deadline.
		w := h.waitPhase("r", exagentv1.PhaseWaiting)
		if until := w.Status.Call("nap").Wait.Until.Time; !until.Equal(deadline) {
			t.Errorf("the wait ends %s, want at the deadline %s", until, deadline)
		}
		h.poke(clk, deadline.Add(time.Second), "r")
		done := h.waitPhase("r", exagentv1.PhaseExpired)
		if done.Status.Reason != exagentv1.ReasonDeadlineExceeded {
			t.Errorf("reason %q, want DeadlineExceeded", done.Status.Reason)
		}
		if c := done.Status.Call("nap"); c.State != exagentv1.CallFailed {
			t.Errorf("call nap = %s, want Failed", c.State)
		}
	})
}

// TestSleepSurvivesARestart: the manager stops while a run sleeps; a new
// one, with nothing in memory, wakes it from the journal alone.
func TestSleepSurvivesARestart(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	first := h.startManagerNoCleanup(controllers.Options{Clock: clk})
	h.createAgent("sleeper", sleeper("30m"))
	h.createRun("r", "sleeper")
	w := h.waitWaiting("r", "nap", 30*time.Minute)
	first.stop()
	h.startManager(controllers.Options{Clock: clk})
	h.poke(clk, w.Status.Call("nap").Wait.Until.Add(time.Second), "r")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	// Woken once, at the time the journal said (the clock's, a second past it).
	if c := done.Status.Call("nap"); c.Outcome == nil || !strings.HasPrefix(c.Outcome.Result, "slept 30m1s (woke at ") {
		t.Errorf("call nap = %+v, want \"slept 30m1s (woke at …)\"", c.Outcome)
	}
}

// TestWaitingRunsCappedPerNamespace: with --max-waiting-runs-per-namespace
// 1, a second run's Sleep is a failed call its model sees (TooManyWaits),
// and that run goes on; the first one still sleeps.
func TestWaitingRunsCappedPerNamespace(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{MaxWaitingRunsPerNamespace: 1})
	h.createAgent("sleeper", sleeper("5h"))
	h.createRun("first", "sleeper")
	h.waitWaiting("first", "nap", 5*time.Hour)
	h.createRun("second", "sleeper")
	done := h.waitPhase("second", exagentv1.PhaseSucceeded)
	c := done.Status.Call("nap")
	if c.State != exagentv1.CallFailed || c.Wait != nil || c.Outcome == nil ||
		!strings.HasPrefix(c.Outcome.Result, exagentv1.ReasonTooManyWaits+": namespace "+h.ns+" already has 1 waiting runs") {
		t.Fatalf("the second run's nap = %s %+v, want Failed TooManyWaits", c.State, c.Outcome)
	}
	if r := h.get("first"); r.Status.Phase != exagentv1.PhaseWaiting {
		t.Errorf("the first run is %s, want still Waiting", r.Status.Phase)
	}
}
