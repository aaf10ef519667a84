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
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Conditions computes the run's conditions from the journal; they are a
// view, never memory, and only those that say something are reported
// (each condition costs the shared apiserver on every status write, issue
// 27; an absent condition reads as False to kubectl wait and kstatus):
//   - Ready: always; True only when Succeeded;
//   - AwaitingApproval: only while approvals are pending (True);
//   - Uncertain: only while a call has no confirmed outcome (True);
//   - Ended: always; False while the run goes on, True once it ended,
//     however (reason: the phase);
//   - Succeeded: only once the run ended, True or False;
//   - Reconciling: only while the run has not ended, a human wait
//     included (True: kstatus' in progress);
//   - Stalled: only when the run ended otherwise than Succeeded (True:
//     kstatus' failed);
//   - Archived, only on a run retention archives: True once its archive
//     sink answered 2xx, False while a failing sink holds the run.
//
// LastTransitionTime is now; callers merge with the conditions the run had
// (mergeConditions keeps the time of a condition whose status did not
// change, and drops those no longer reported).
func Conditions(s Status, generation int64, now time.Time) []metav1.Condition {
	at := secTime(now)
	mk := func(t string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: truncateUTF8(msg, exagentv1.MaxConditionMessageBytes),
			ObservedGeneration: generation, LastTransitionTime: at}
	}
	tf := func(ok bool) metav1.ConditionStatus {
		if ok {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	phase := string(s.Phase)
	if phase == "" {
		phase = exagentv1.ReasonNotStarted
	}
	readyReason := s.Reason
	if readyReason == "" {
		readyReason = phase
	}
	out := []metav1.Condition{mk(exagentv1.ConditionReady, tf(s.Phase == exagentv1.PhaseSucceeded), readyReason, s.Message)}

	var pending []string
	for i := range s.Approvals {
		if a := &s.Approvals[i]; a.State == exagentv1.ApprovalPending {
			p := fmt.Sprintf("%s (call %s", a.ID, a.CallID)
			if a.ExpiresAt != nil {
				p += ", expires " + a.ExpiresAt.UTC().Format(time.RFC3339)
			}
			pending = append(pending, p+")")
		}
	}
	switch {
	case s.Phase == exagentv1.PhaseAwaitingApproval && len(pending) > 0:
		out = append(out, mk(exagentv1.ConditionAwaitingApproval, metav1.ConditionTrue, exagentv1.ReasonPending,
			"pending: "+strings.Join(pending, ", ")))
	case s.Reason == exagentv1.ReasonChildAwaitingApproval && s.Phase == exagentv1.PhaseAwaitingApproval:
		// A descendant waits for a human (delegate.go): the message names it.
		out = append(out, mk(exagentv1.ConditionAwaitingApproval, metav1.ConditionTrue, exagentv1.ReasonChildAwaitingApproval, s.Message))
	}
	if s.Phase == exagentv1.PhaseWaiting {
		out = append(out, mk(exagentv1.ConditionWaiting, metav1.ConditionTrue, exagentv1.ReasonWaiting, s.Message))
	}
	var uncertain []string
	for i := range s.Calls {
		if c := &s.Calls[i]; c.State == exagentv1.CallUncertain {
			uncertain = append(uncertain, fmt.Sprintf("%s (%s)", c.ID, c.Tool))
		}
	}
	switch {
	case len(uncertain) > 0:
		out = append(out, mk(exagentv1.ConditionUncertain, metav1.ConditionTrue, exagentv1.ReasonOutcomeUncertain,
			"no confirmed outcome: "+strings.Join(uncertain, ", ")))
	case s.Reason == exagentv1.ReasonChildUncertain && s.Phase == exagentv1.PhaseUncertain:
		out = append(out, mk(exagentv1.ConditionUncertain, metav1.ConditionTrue, exagentv1.ReasonChildUncertain, s.Message))
	}
	out = append(out, endConditions(s, phase, readyReason, mk)...)
	return append(out, archiveCondition(&s, mk)...) // retention.go
}

// endConditions are Ended, Succeeded, Reconciling and Stalled: how tools
// that know nothing of the phases (kubectl wait, kstatus, Argo CD, Flux)
// tell a run that goes on from one that ended, and how it ended.
func endConditions(s Status, phase, reason string, mk func(t string, st metav1.ConditionStatus, reason, msg string) metav1.Condition) []metav1.Condition {
	goingOn := "the run is " + phase
	if s.Message != "" {
		goingOn += ": " + s.Message
	}
	if !s.Phase.IsTerminal() {
		return []metav1.Condition{
			mk(exagentv1.ConditionEnded, metav1.ConditionFalse, phase, goingOn),
			mk(exagentv1.ConditionReconciling, metav1.ConditionTrue, phase, goingOn),
		}
	}
	ended := "the run ended " + phase
	if s.Reason != "" && s.Reason != phase {
		ended += " (" + s.Reason + ")"
	}
	if s.Message != "" {
		ended += ": " + s.Message
	}
	if s.Phase == exagentv1.PhaseSucceeded {
		return []metav1.Condition{
			mk(exagentv1.ConditionEnded, metav1.ConditionTrue, phase, ended),
			mk(exagentv1.ConditionSucceeded, metav1.ConditionTrue, exagentv1.ReasonSucceeded, ended),
		}
	}
	return []metav1.Condition{
		mk(exagentv1.ConditionEnded, metav1.ConditionTrue, phase, ended),
		mk(exagentv1.ConditionSucceeded, metav1.ConditionFalse, reason, ended),
		mk(exagentv1.ConditionStalled, metav1.ConditionTrue, reason, ended),
	}
}
