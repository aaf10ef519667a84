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
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// endEvents counts the end-of-run Events (RunSucceeded, RunFailed) about
// run — this run, by UID, not an earlier one of the same name.
func (h *harness) endEvents(run *exagentv1.AgentRun) []string {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name != run.Name || e.Regarding.UID != run.UID {
			continue
		}
		if e.Reason == exagentv1.EventRunSucceeded || e.Reason == exagentv1.EventRunFailed {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// TestRunEndedOnce: a run that Succeeds and one that is Denied each tell
// the sink that they ended under exactly one id — a re-send (at least once)
// may repeat it, never mint another — and each leaves exactly one
// end-of-run Event. The count is taken after the manager stopped (its
// Event queue writes what it holds at the stop) and after a second manager
// has taken over the ended runs and finished a run of its own, so a
// re-announcement by a later reconcile, or by a manager that finds the runs
// already ended, would be counted too.
func TestRunEndedOnce(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	sk := newSink(t)
	spec := refundAgent(ts)
	spec.Policy.OnDeny = exagentv1.OnDenyStop
	spec.Notify = []exagentv1.NotifySink{{Name: "oncall", URL: sk.srv.URL + "/hook",
		Events: []exagentv1.NotifyEvent{exagentv1.NotifyRunEnded}}}
	first := h.startManager(controllers.Options{})
	h.createAgent("payments", spec)

	ends := map[string]exagentv1.RunPhase{"approved": exagentv1.PhaseSucceeded, "denied": exagentv1.PhaseDenied}
	for name := range ends {
		h.createRun(name, "payments")
	}
	for name := range ends {
		a := pendingApproval(t, h.waitPhase(name, exagentv1.PhaseAwaitingApproval))
		if name == "denied" {
			h.decide(alice, h.decision(name, "alice").Deny(a).Reason("no"))
		} else {
			h.decide(alice, h.decision(name, "alice").Approve(a).Reason("ok"))
		}
	}
	ended := map[string]*exagentv1.AgentRun{}
	for name, phase := range ends {
		h.waitPhase(name, phase)
		ended[name] = h.waitRun(name, "run-ended journaled Delivered", func(r *exagentv1.AgentRun) bool {
			rec := record(r, exagentv1.NotifyRunEnded, "oncall")
			return rec != nil && rec.State == exagentv1.NotificationDelivered
		})
		h.waitEvents(name, map[exagentv1.RunPhase]string{
			exagentv1.PhaseSucceeded: exagentv1.EventRunSucceeded, exagentv1.PhaseDenied: exagentv1.EventRunFailed}[phase])
	}
	first.stop()

	// Another manager takes the ended runs over; it has worked through its
	// queue once a run created after it started has ended.
	h.startManager(controllers.Options{})
	h.createRun("after", "payments")
	a := pendingApproval(t, h.waitPhase("after", exagentv1.PhaseAwaitingApproval))
	h.decide(alice, h.decision("after", "alice").Approve(a).Reason("ok"))
	h.waitPhase("after", exagentv1.PhaseSucceeded)
	h.waitRun("after", "its run-ended journaled Delivered", func(r *exagentv1.AgentRun) bool {
		rec := record(r, exagentv1.NotifyRunEnded, "oncall")
		return rec != nil && rec.State == exagentv1.NotificationDelivered
	})
	h.waitEvents("after", exagentv1.EventRunSucceeded)

	for name, phase := range ends {
		run := ended[name]
		source := "/agentruns/" + name
		ids := map[string]int{}
		for _, ce := range sk.cloudEvents(t, "io.exagent.run.run-ended") {
			if strings.HasSuffix(ce.Source, source) {
				ids[ce.ID]++
			}
		}
		rec := record(run, exagentv1.NotifyRunEnded, "oncall")
		if len(ids) != 1 || ids[rec.ID] == 0 {
			t.Errorf("%s (%s): run-ended deliveries by id %v, want every one under the journaled id %s", name, phase, ids, rec.ID)
		}
		if got := h.endEvents(run); len(got) != 1 {
			t.Errorf("%s (%s): %d end-of-run Events, want exactly one: %q", name, phase, len(got), got)
		}
	}
}
