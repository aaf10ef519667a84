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
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// publishReleased sends the Event of a run whose hand-back at the stop
// also ended it (a result recorded in the drain finished or failed it, or
// left a call Uncertain): the Event a reconcile would have sent, after the
// commit that made it true. The manager's event recorder is asynchronous
// and stops with the manager, which would drop it: this one is written
// directly, before the releaser returns.
func (r *AgentRunReconciler) publishReleased(old, written *exagentv1.AgentRun) {
	p := written.Status.Phase
	if p == old.Status.Phase || (!p.IsTerminal() && p != exagentv1.PhaseUncertain) {
		return
	}
	sc := &scope{run: written}
	sc.noteEnd(written.Status)
	r.createEvents(written, sc.notes)
}

// createEvents writes notes as Events directly: during the stop the Event
// queue (internal/eventqueue) has stopped, and drops what it is given.
func (r *AgentRunReconciler) createEvents(run *exagentv1.AgentRun, notes []note) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range notes {
		if err := r.Client.Create(ctx, releaseEvent(run, n, r.Holder, r.Clock.Now())); err != nil {
			logf.FromContext(ctx).Info("could not send the Event of a run that changed during the stop",
				"run", run.Name, "namespace", run.Namespace, "reason", n.reason, "error", err.Error())
		}
	}
}

func releaseEvent(run *exagentv1.AgentRun, n note, holder string, now time.Time) *eventsv1.Event {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: run.Name + "." + hex.EncodeToString(b), Namespace: run.Namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "exagent-controller",
		ReportingInstance:   holder,
		Action:              n.reason,
		Reason:              n.reason,
		Type:                n.eventType,
		Note:                truncate(n.message, 1000),
		Regarding: corev1.ObjectReference{APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentRun",
			Namespace: run.Namespace, Name: run.Name, UID: run.UID, ResourceVersion: run.ResourceVersion},
	}
}
