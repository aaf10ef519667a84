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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/schedule"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// scheduleSpec is an hourly schedule of agent.
func scheduleSpec(agent string, policy exagentv1.ConcurrencyPolicy) exagentv1.AgentScheduleSpec {
	return exagentv1.AgentScheduleSpec{
		Schedule:          "0 * * * *",
		ConcurrencyPolicy: policy,
		RunTemplate:       exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: "the nightly review"},
	}
}

// createSchedule creates a schedule as admission would leave it: stamped
// with alice as the setter of its spec.
func (h *harness) createSchedule(name string, spec exagentv1.AgentScheduleSpec) *exagentv1.AgentSchedule {
	h.t.Helper()
	by, err := json.Marshal(users[alice].actor)
	if err != nil {
		h.t.Fatal(err)
	}
	s := &exagentv1.AgentSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Annotations: map[string]string{exagentv1.AnnotationSpecSetBy: string(by)}},
		Spec:       spec,
	}
	if err := h.c.Create(context.Background(), s); err != nil {
		h.t.Fatalf("creating schedule %s: %v", name, err)
	}
	return s
}

// at moves the fake clock to t and wakes the schedule (a real clock's
// requeue would): the tests never wait for a requeue in real time.
func (h *harness) at(clk *clocktesting.FakeClock, t time.Time, sched string) {
	h.t.Helper()
	clk.SetTime(t)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.exagent.io/now":%q}}}`, t.Format(time.RFC3339Nano))
	s := &exagentv1.AgentSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: sched}}
	if err := h.c.Patch(context.Background(), s, client.RawPatch(types.MergePatchType, patch)); err != nil {
		h.t.Fatalf("waking schedule %s: %v", sched, err)
	}
}

// ticks are the first n ticks of sched after its creation, and their runs' names.
func ticks(t testing.TB, sched *exagentv1.AgentSchedule, n int) ([]time.Time, []string) {
	t.Helper()
	s, err := schedule.Parse(sched.Spec.Schedule, sched.Spec.TimeZone)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	var names []string
	at := sched.CreationTimestamp.Time
	for range n {
		at = s.Next(at)
		out = append(out, at)
		names = append(names, schedule.RunName(sched.Name, at))
	}
	return out, names
}

func (h *harness) waitSchedule(name, what string, cond func(*exagentv1.AgentSchedule) bool) *exagentv1.AgentSchedule {
	h.t.Helper()
	var last exagentv1.AgentSchedule
	if !eventually(func() bool {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &last)
		return err == nil && cond(&last)
	}) {
		h.t.Fatalf("schedule %s: timed out waiting %s; status %+v", name, what, last.Status)
	}
	return &last
}

// waitActed waits until the schedule acted on tick (created its run or skipped it).
func (h *harness) waitActed(name string, tick time.Time) *exagentv1.AgentSchedule {
	h.t.Helper()
	return h.waitSchedule(name, "to act on the tick of "+tick.String(), func(s *exagentv1.AgentSchedule) bool {
		return s.Status.LastScheduleTime != nil && !s.Status.LastScheduleTime.Before(&metav1.Time{Time: tick})
	})
}

func (h *harness) scheduleRuns(name string) []string {
	h.t.Helper()
	var list exagentv1.AgentRunList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns), client.MatchingLabels{exagentv1.LabelSchedule: name}); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, r := range list.Items {
		out = append(out, r.Name)
	}
	return out
}

func (h *harness) wantScheduleRuns(name string, want ...string) {
	h.t.Helper()
	got := h.scheduleRuns(name)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		h.t.Errorf("runs of schedule %s = %v, want %v", name, got, want)
	}
}

// TestScheduleAllow: each tick makes its run while the earlier one is still
// open; the run is the schedule's (owner, label, tick annotation) and is
// requested by the setter of the schedule's spec.
func TestScheduleAllow(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("ops", refundAgent(ts))
	sched := h.createSchedule("nightly", scheduleSpec("ops", exagentv1.ConcurrencyAllow))
	at, names := ticks(t, sched, 2)
	h.waitSchedule("nightly", "the next tick", func(s *exagentv1.AgentSchedule) bool {
		return s.Status.NextScheduleTime != nil && s.Status.NextScheduleTime.Equal(&metav1.Time{Time: at[0]})
	})

	h.at(clk, at[0].Add(30*time.Second), "nightly")
	run := h.waitPhase(names[0], exagentv1.PhaseAwaitingApproval)
	if run.Spec.RequestedBy == nil || run.Spec.RequestedBy.Username != alice {
		t.Errorf("requestedBy = %+v, want alice (the schedule's setter)", run.Spec.RequestedBy)
	}
	if ref := metav1.GetControllerOf(run); ref == nil || ref.Kind != "AgentSchedule" || ref.Name != "nightly" {
		t.Errorf("controller = %+v, want the schedule", ref)
	}
	if got := run.Annotations[exagentv1.AnnotationScheduledTime]; got != at[0].UTC().Format(time.RFC3339) {
		t.Errorf("scheduled-time = %q, want %s", got, at[0].UTC().Format(time.RFC3339))
	}

	h.at(clk, at[1].Add(30*time.Second), "nightly")
	h.waitPhase(names[1], exagentv1.PhaseAwaitingApproval)
	s := h.waitSchedule("nightly", "two active runs", func(s *exagentv1.AgentSchedule) bool { return s.Status.ActiveCount == 2 })
	if s.Status.LastRun != names[1] {
		t.Errorf("lastRun = %q, want %s", s.Status.LastRun, names[1])
	}
	h.wantScheduleRuns("nightly", names...)
}

// TestScheduleForbid: a tick while a run is open is skipped (status and an
// Event say so); once the run ended, the next tick runs.
func TestScheduleForbid(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("ops", refundAgent(ts))
	sched := h.createSchedule("nightly", scheduleSpec("ops", exagentv1.ConcurrencyForbid))
	at, names := ticks(t, sched, 3)

	h.at(clk, at[0].Add(time.Minute), "nightly")
	first := h.waitPhase(names[0], exagentv1.PhaseAwaitingApproval)
	h.waitSchedule("nightly", "the first run active", func(s *exagentv1.AgentSchedule) bool { return s.Status.ActiveCount == 1 })

	h.at(clk, at[1].Add(time.Minute), "nightly")
	s := h.waitActed("nightly", at[1])
	c := meta.FindStatusCondition(s.Status.Conditions, exagentv1.ConditionReady)
	if c == nil || !strings.Contains(c.Message, "skipped: run "+names[0]+" has not ended") {
		t.Errorf("Ready = %+v, want it to say the tick was skipped for %s", c, names[0])
	}
	h.wantScheduleRuns("nightly", names[0])
	h.waitScheduleEvent("nightly", controllers.EventScheduleSkipped)

	h.approve(first, "ok")
	h.waitPhase(names[0], exagentv1.PhaseSucceeded)
	h.at(clk, at[2].Add(time.Minute), "nightly")
	h.waitExists(names[2])
	h.wantScheduleRuns("nightly", names[0], names[2])
}

// TestScheduleReplace: a tick while a run has a tool call in flight
// cancels that run (the call becomes Uncertain and is not sent again) and
// creates the tick's run.
func TestScheduleReplace(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ts.respond = func(_ http.ResponseWriter, r *http.Request, _ []byte) {
		<-r.Context().Done() // sent, never answered: in flight until cancelled
	}
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	hang := refundAgent(ts)
	hang.Tools[0].HTTP.Timeout = "10m"
	hang.Policy = exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}
	h.createAgent("ops", hang)
	sched := h.createSchedule("nightly", scheduleSpec("ops", exagentv1.ConcurrencyReplace))
	at, names := ticks(t, sched, 2)

	h.at(clk, at[0].Add(time.Minute), "nightly")
	h.waitExists(names[0])
	if !eventually(func() bool { return len(ts.journal()) == 1 }) {
		t.Fatalf("the first run's tool call was not sent: %v", ts.journal())
	}

	h.at(clk, at[1].Add(time.Minute), "nightly")
	old := h.waitPhase(names[0], exagentv1.PhaseCancelled)
	if old.Status.Reason != exagentv1.ReasonReplaced || !strings.Contains(old.Status.Message, "replaced by run "+names[1]) {
		t.Errorf("reason %s message %q, want Replaced by %s", old.Status.Reason, old.Status.Message, names[1])
	}
	if got := old.Status.UncertainCalls(); len(got) != 1 {
		t.Errorf("uncertain calls = %+v, want the call in flight", got)
	}
	if old.Status.Claim != nil {
		t.Errorf("claim = %+v, want none", old.Status.Claim)
	}
	h.waitExists(names[1])
	// The replaced run's call is never sent again: the new run's is the only other.
	if !eventually(func() bool { return len(ts.journal()) == 2 }) {
		t.Fatalf("journal = %+v, want the new run's call", ts.journal())
	}
	first := ts.journal()[0]
	for _, r := range ts.journal()[1:] {
		if r.Run == first.Run {
			t.Errorf("the replaced run sent another call: %+v", r)
		}
	}
}

// TestScheduleMissedTick: ticks missed while no manager ran make one run,
// for the most recent of them, when it is within startingDeadlineSeconds,
// and none when it is later.
func TestScheduleMissedTick(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	m := h.startManager(controllers.Options{Clock: clk})
	h.createAgent("ops", refundAgent(ts))
	spec := scheduleSpec("ops", exagentv1.ConcurrencyAllow)
	spec.StartingDeadlineSeconds = ptr.To[int64](600)
	sched := h.createSchedule("nightly", spec)
	at, names := ticks(t, sched, 6)
	h.waitSchedule("nightly", "the next tick", func(s *exagentv1.AgentSchedule) bool { return s.Status.NextScheduleTime != nil })
	m.stop()

	// Down over three ticks; back 5 minutes after the third.
	clk.SetTime(at[2].Add(5 * time.Minute))
	m = h.startManager(controllers.Options{Clock: clk})
	h.waitExists(names[2])
	h.waitActed("nightly", at[2])
	h.wantScheduleRuns("nightly", names[2])
	m.stop()

	// Down over the next two; back 20 minutes after the fifth: too late.
	clk.SetTime(at[4].Add(20 * time.Minute))
	h.startManager(controllers.Options{Clock: clk})
	s := h.waitActed("nightly", at[4])
	c := meta.FindStatusCondition(s.Status.Conditions, exagentv1.ConditionReady)
	if c == nil || !strings.Contains(c.Message, "past spec.startingDeadlineSeconds") {
		t.Errorf("Ready = %+v, want it to say the tick was too late", c)
	}
	h.waitScheduleEvent("nightly", controllers.EventScheduleMissed)
	h.wantScheduleRuns("nightly", names[2])

	h.at(clk, at[5].Add(time.Minute), "nightly")
	h.waitExists(names[5])
}

// TestScheduleTwoManagers: two managers at once, each with its own cache,
// make one run per tick.
func TestScheduleTwoManagers(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("ops", refundAgent(ts))
	sched := h.createSchedule("nightly", scheduleSpec("ops", exagentv1.ConcurrencyAllow))
	at, names := ticks(t, sched, 3)
	for i := range at {
		h.at(clk, at[i].Add(time.Minute), "nightly")
		h.waitExists(names[i])
		h.waitActed("nightly", at[i])
	}
	h.wantScheduleRuns("nightly", names...)
	for _, n := range names {
		h.waitPhase(n, exagentv1.PhaseAwaitingApproval)
	}
}

// TestScheduleHistoryLimits: ended runs beyond the limits are deleted,
// oldest first; open runs never are.
func TestScheduleHistoryLimits(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("quick", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("all fine"))})
	spec := scheduleSpec("quick", exagentv1.ConcurrencyForbid)
	spec.SuccessfulRunsHistoryLimit = ptr.To[int32](2)
	sched := h.createSchedule("nightly", spec)
	at, names := ticks(t, sched, 4)
	for i := range at {
		h.at(clk, at[i].Add(time.Minute), "nightly")
		h.waitPhase(names[i], exagentv1.PhaseSucceeded)
	}
	h.waitGone(names[0])
	h.waitGone(names[1])
	h.wantScheduleRuns("nightly", names[2], names[3])
}

// TestScheduleDST: a 02:30 daily schedule in America/New_York does not run
// on the day the clocks skip 02:00–03:00, and runs at 02:30 local time
// (EDT) the day after.
func TestScheduleDST(t *testing.T) {
	h := newHarness(t)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 2027-03-14 is the spring-forward day.
	clk := clocktesting.NewFakeClock(time.Date(2027, 3, 13, 2, 35, 0, 0, ny))
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("quick", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("all fine"))})
	spec := scheduleSpec("quick", exagentv1.ConcurrencyAllow)
	spec.Schedule, spec.TimeZone = "30 2 * * *", "America/New_York"
	h.createSchedule("nightly", spec)
	// Missed ticks since the schedule's creation run once: the 13th's.
	day13 := time.Date(2027, 3, 13, 2, 30, 0, 0, ny)
	h.waitExists(schedule.RunName("nightly", day13))
	h.waitSchedule("nightly", "the next tick on the 15th", func(s *exagentv1.AgentSchedule) bool {
		return s.Status.NextScheduleTime != nil && s.Status.NextScheduleTime.Equal(&metav1.Time{Time: time.Date(2027, 3, 15, 2, 30, 0, 0, ny)})
	})

	// The 14th has no 02:30 (internal/schedule's table tests cover the
	// skip itself); waking the schedule then makes nothing.
	h.at(clk, time.Date(2027, 3, 14, 12, 0, 0, 0, ny), "nightly")
	h.wantScheduleRuns("nightly", schedule.RunName("nightly", day13))

	day15 := time.Date(2027, 3, 15, 2, 30, 0, 0, ny)
	if got := day15.UTC(); got.Hour() != 6 {
		t.Fatalf("02:30 EDT is %v UTC, want 06:30", got)
	}
	h.at(clk, day15.Add(time.Minute), "nightly")
	h.waitExists(schedule.RunName("nightly", day15))
	h.wantScheduleRuns("nightly", schedule.RunName("nightly", day13), schedule.RunName("nightly", day15))
}

// waitScheduleEvent waits for an Event of reason about schedule name.
func (h *harness) waitScheduleEvent(name, reason string) {
	h.t.Helper()
	if !eventually(func() bool {
		var list corev1.EventList
		if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "AgentSchedule" && e.InvolvedObject.Name == name && e.Reason == reason {
				return true
			}
		}
		return false
	}) {
		h.t.Fatalf("no Event %s about schedule %s", reason, name)
	}
}

// TestScheduleUnsealedSetter: with a signer, a schedule whose setter
// carries no admission seal (written past the webhook) makes no run and
// says why.
func TestScheduleUnsealedSetter(t *testing.T) {
	h := newHarness(t)
	signer, err := authz.NewSigner(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk, Signer: signer})
	h.createAgent("quick", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("all fine"))})
	sched := h.createSchedule("nightly", scheduleSpec("quick", exagentv1.ConcurrencyAllow))
	at, _ := ticks(t, sched, 1)
	h.at(clk, at[0].Add(time.Minute), "nightly")
	s := h.waitSchedule("nightly", "to refuse its setter", func(s *exagentv1.AgentSchedule) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, exagentv1.ConditionReady)
		return c != nil && c.Reason == exagentv1.ReasonNoRequester
	})
	if c := meta.FindStatusCondition(s.Status.Conditions, exagentv1.ConditionReady); !strings.Contains(c.Message, "past the exagent admission webhook") {
		t.Errorf("Ready = %+v, want it to say the setter was not sealed", c)
	}
	h.wantScheduleRuns("nightly")
}

// TestScheduleRunRefused: a tick whose run admission refuses is skipped,
// not retried in a loop: the schedule says why (Ready False, RunRefused,
// and an Event) until a later tick acts, and the next tick tries again.
func TestScheduleRunRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	// A ValidatingAdmissionPolicy in this namespace refuses runs of
	// schedule "refused" while the test says so.
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + h.ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"exagent.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"agentruns"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.labels) || !('exagent.io/schedule' in object.metadata.labels) || object.metadata.labels['exagent.io/schedule'] != 'refused'",
				Message:    "the test's policy refuses this schedule's runs",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + h.ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": h.ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := h.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.c.Delete(context.Background(), o) })
	}
	probe := func() error {
		r := fixture.MakeRun("probe", h.ns).Agent("quick").Input("probe").Obj()
		r.Labels = map[string]string{exagentv1.LabelSchedule: "refused"}
		return h.c.Create(ctx, r, client.DryRunAll)
	}
	if !eventually(func() bool { return probe() != nil }) {
		t.Fatal("the test's admission policy never took effect")
	}

	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("quick", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("all fine"))})
	sched := h.createSchedule("refused", scheduleSpec("quick", exagentv1.ConcurrencyAllow))
	at, names := ticks(t, sched, 2)
	h.at(clk, at[0].Add(time.Minute), "refused")
	s := h.waitSchedule("refused", "to say its run was refused", func(s *exagentv1.AgentSchedule) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, exagentv1.ConditionReady)
		return c != nil && c.Reason == exagentv1.ReasonRunRefused
	})
	if c := meta.FindStatusCondition(s.Status.Conditions, exagentv1.ConditionReady); !strings.Contains(c.Message, "the test's policy refuses") ||
		!strings.Contains(c.Message, names[0]) {
		t.Errorf("Ready = %+v, want it to name the run and the refusal", c)
	}
	h.waitScheduleEvent("refused", controllers.EventScheduleRunRefused)
	h.wantScheduleRuns("refused")

	if err := h.c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return probe() == nil }) {
		t.Fatal("the test's admission policy never went away")
	}
	h.at(clk, at[1].Add(time.Minute), "refused")
	h.waitExists(names[1])
	h.waitSchedule("refused", "to tick again", func(s *exagentv1.AgentSchedule) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, exagentv1.ConditionReady)
		return c != nil && c.Reason == exagentv1.ReasonScheduled
	})
	h.wantScheduleRuns("refused", names[1])
}
