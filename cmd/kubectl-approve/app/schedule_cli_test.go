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
	"context"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

var scheduleRunLine = regexp.MustCompile(`(?m)^agentrun/(yearly-manual-[a-z0-9]{5}) created from schedule yearly \(agent summary, requested by you\)$`)

// TestScheduleRunFromTheCLI: `schedule run` creates one run of the
// schedule's template now, as the person running it (admission stamps
// them as requester, not the schedule's setter), labelled with and owned
// by the schedule; the run runs to its end. A schedule that does not exist
// is named in the error.
func TestScheduleRunFromTheCLI(t *testing.T) {
	ns := namespace(t, "cli-sched")
	e := cluster()
	agent := fixture.MakeAgent("summary", ns).Script(fixture.TextTurn("all quiet")).Obj()
	if err := e.Client.Create(t.Context(), agent); err != nil {
		t.Fatal(err)
	}
	sched := &exagentv1.AgentSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "yearly", Namespace: ns},
		Spec: exagentv1.AgentScheduleSpec{
			Schedule:    "@yearly",
			RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "summary"}, Input: "summarize the year"},
		},
	}
	if err := e.Client.Create(t.Context(), sched); err != nil {
		t.Fatal(err)
	}

	out := mustPlugin(t, "bob", "schedule", "run", "yearly", "-n", ns)
	m := scheduleRunLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("schedule run printed:\n%s", out)
	}
	run := waitRun(t, ns, m[1], "to succeed", succeeded)
	if run.Spec.RequestedBy == nil || run.Spec.RequestedBy.Username != "bob" {
		t.Errorf("requestedBy = %+v, want bob (who ran the command)", run.Spec.RequestedBy)
	}
	if run.Labels[exagentv1.LabelSchedule] != "yearly" || len(run.OwnerReferences) != 1 || run.OwnerReferences[0].UID != sched.UID {
		t.Errorf("labels %v owners %+v, want the schedule's", run.Labels, run.OwnerReferences)
	}
	if run.Spec.Input != "summarize the year" {
		t.Errorf("input = %q, want the template's", run.Spec.Input)
	}
	waitFor(t, "the schedule to see its ended run", func(ctx context.Context) (bool, error) {
		var s exagentv1.AgentSchedule
		err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "yearly"}, &s)
		return err == nil && s.Status.NextScheduleTime != nil && s.Status.ActiveCount == 0, err
	})

	var errOut syncBuffer
	err := plugin(t.Context(), "bob", &errOut, "schedule", "run", "nowhere", "-n", ns)
	if err == nil || !strings.Contains(err.Error(), "reading AgentSchedule "+ns+"/nowhere") {
		t.Errorf("schedule run of a missing schedule: %v", err)
	}
}
