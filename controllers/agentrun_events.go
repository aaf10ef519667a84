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

package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

const (
	normal  = corev1.EventTypeNormal
	warning = corev1.EventTypeWarning
)

// note is an Event waiting for the commit it describes.
type note struct {
	eventType, reason, message string
}

func (sc *scope) note(reason string, eventType string, format string, args ...any) {
	sc.notes = append(sc.notes, note{eventType: eventType, reason: reason, message: fmt.Sprintf(format, args...)})
}

// noteEnd records the Event of a run that stopped running: succeeded,
// uncertain, or ended otherwise.
func (sc *scope) noteEnd(s loop.Status) {
	switch s.Phase {
	case exagentv1.PhaseSucceeded:
		sc.note(exagentv1.EventRunSucceeded, normal, "%s", s.Message)
	case exagentv1.PhaseUncertain:
		sc.note(exagentv1.EventOutcomeUncertain, warning, "%s", s.Message)
	default:
		sc.note(exagentv1.EventRunFailed, warning, "run %s (%s): %s", s.Phase, s.Reason, s.Message)
	}
}

// publish sends the Events of a commit that succeeded, never before.
func (r *AgentRunReconciler) publish(sc *scope) {
	if r.Recorder == nil {
		return
	}
	for _, n := range sc.notes {
		r.Recorder.Eventf(sc.run, nil, n.eventType, n.reason, n.reason, "%s", n.message)
	}
}

// notReady is the Ready=False condition of a run that waits for its Agent
// to be fixed; it overrides the journal's view for this reconcile only.
func notReady(reason, message string, sc *scope) metav1.Condition {
	return metav1.Condition{
		Type:               exagentv1.ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: sc.run.Generation,
		LastTransitionTime: metav1.NewTime(sc.now),
	}
}

// agentNotReady is what a run's message adds when it cannot go on and its
// Agent's last check, of the Agent's current generation, found it not
// Ready: the Agent's failing condition, which names what to fix (the
// model's Secret, say), and its reason. "" when the Agent is Ready or not
// checked yet — a run never waits on that check (Ready is information,
// not a gate).
func agentNotReady(agent *exagentv1.Agent) (reason, note string) {
	if agent == nil || agent.Status.ObservedGeneration != agent.Generation {
		return "", ""
	}
	c := meta.FindStatusCondition(agent.Status.Conditions, exagentv1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != agent.Generation {
		return "", ""
	}
	return c.Reason, fmt.Sprintf("; Agent %q is not Ready (%s): %s", agent.Name, c.Reason, truncate(c.Message, 512))
}

func equalStatus(a, b loop.Status) bool { return equality.Semantic.DeepEqual(a, b) }
