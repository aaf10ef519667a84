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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestConditions(t *testing.T) {
	env := defaultEnv(t)
	_, awaiting := paused(t)
	_, unc := uncertainRun(t)
	now := t0.Add(90 * time.Minute)
	const (
		T = metav1.ConditionTrue
		F = metav1.ConditionFalse
		U = metav1.ConditionUnknown
	)
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, ObservedGeneration: 3, LastTransitionTime: secTime(now)}
	}
	// goingOn and failed are the end conditions of a run that goes on (in
	// phase) and of one that ended otherwise than Succeeded (in phase, with
	// reason): only those that say something (Succeeded not before the end,
	// Reconciling and Stalled only when True).
	goingOn := func(phase string) []metav1.Condition {
		return []metav1.Condition{
			cond(exagentv1.ConditionEnded, F, phase),
			cond(exagentv1.ConditionReconciling, T, phase),
		}
	}
	failed := func(phase, reason string) []metav1.Condition {
		return []metav1.Condition{
			cond(exagentv1.ConditionEnded, T, phase),
			cond(exagentv1.ConditionSucceeded, F, reason),
			cond(exagentv1.ConditionStalled, T, reason),
		}
	}
	// none: no approval pending and no uncertain call are not reported.
	var none []metav1.Condition
	list := func(parts ...[]metav1.Condition) []metav1.Condition {
		var out []metav1.Condition
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	ready := func(st metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{cond(exagentv1.ConditionReady, st, reason)}
	}
	cases := map[string]struct {
		s    Status
		want []metav1.Condition
	}{
		"not started": {s: Status{}, want: list(ready(F, "NotStarted"), none, goingOn("NotStarted"))},
		"running":     {s: running(t, env), want: list(ready(F, exagentv1.ReasonRunning), none, goingOn("Running"))},
		"awaiting": {s: awaiting, want: list(ready(F, exagentv1.ReasonPending), []metav1.Condition{
			cond(exagentv1.ConditionAwaitingApproval, T, exagentv1.ReasonPending)}, goingOn("AwaitingApproval"))},
		"uncertain": {s: unc, want: list(ready(F, exagentv1.ReasonOutcomeUncertain), []metav1.Condition{
			cond(exagentv1.ConditionUncertain, T, exagentv1.ReasonOutcomeUncertain)}, goingOn("Uncertain"))},
		"succeeded": {s: Status{Phase: exagentv1.PhaseSucceeded, Reason: exagentv1.ReasonSucceeded}, want: list(ready(T, exagentv1.ReasonSucceeded), none,
			[]metav1.Condition{
				cond(exagentv1.ConditionEnded, T, "Succeeded"),
				cond(exagentv1.ConditionSucceeded, T, exagentv1.ReasonSucceeded),
			})},
		"failed": {s: Status{Phase: exagentv1.PhaseFailed, Reason: exagentv1.ReasonScriptExhausted},
			want: list(ready(F, exagentv1.ReasonScriptExhausted), none, failed("Failed", exagentv1.ReasonScriptExhausted))},
		"denied": {s: Status{Phase: exagentv1.PhaseDenied, Reason: exagentv1.ReasonDenied},
			want: list(ready(F, exagentv1.ReasonDenied), none, failed("Denied", exagentv1.ReasonDenied))},
		"expired without a reason": {s: Status{Phase: exagentv1.PhaseExpired},
			want: list(ready(F, "Expired"), none, failed("Expired", "Expired"))},
		"phase without reason": {s: Status{Phase: exagentv1.PhaseQueued}, want: list(ready(F, "Queued"), none, goingOn("Queued"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Conditions(tc.s, 3, now)
			if diff := cmp.Diff(tc.want, got, cmpIgnoreMessage()); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
	msgs := Conditions(awaiting, 1, now)
	if !strings.Contains(msgs[1].Message, "p1-r1 (call p1, expires 2026-03-05T10:00:00Z)") {
		t.Errorf("AwaitingApproval message = %q", msgs[1].Message)
	}
	if msgs := Conditions(unc, 1, now); !strings.Contains(msgs[2].Message, "p1 (pay), p2 (pay)") {
		t.Errorf("Uncertain message = %q", msgs[2].Message)
	}
	end := Conditions(Status{Phase: exagentv1.PhaseFailed, Reason: exagentv1.ReasonLimitExceeded, Message: "maxSteps 3 reached"}, 1, now)
	if got := end[3].Message; got != "the run ended Failed (LimitExceeded): maxSteps 3 reached" {
		t.Errorf("Ended message = %q", got)
	}
}
