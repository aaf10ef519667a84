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
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/triggers"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agenttriggers/status,verbs=get;update;patch

// EventTriggerNotReady is the Warning Event on an AgentTrigger that turned
// not Ready (its condition's reason and message say why).
const EventTriggerNotReady = "TriggerNotReady"

// triggerRecheck is how often a trigger that is not Ready is looked at
// again: the manager watches no Secrets, so a fixed Secret shows then.
const triggerRecheck = time.Minute

// EventProblems says why a kubernetesEvents trigger's watch is not
// running (nil when it is, or when it is no such trigger).
type EventProblems interface {
	Problems(key types.NamespacedName) []string
}

// TriggerReconciler keeps an AgentTrigger's Ready condition and
// activeRuns: Ready says whether an event would make a run now (the
// secret, the expressions and the sealed setter — read exactly as the
// listener reads them — and, for Kubernetes Events, the watch), so a
// misconfigured trigger shows on kubectl get instead of as a sender's
// 503. The counts are TriggerStats's.
type TriggerReconciler struct {
	// Owner says which of these objects this manager writes (shards.go).
	Owner    Ownership
	Client   client.Client
	Runs     *TriggerRuns
	Events   EventProblems
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Name     string

	// wake carries the triggers whose Event watches changed (Wake).
	wake chan event.TypedGenericEvent[*exagentv1.AgentTrigger]
}

// Wake asks the controller to look at the trigger key again (its Event
// watches' problems changed). It never blocks: past a full buffer the
// trigger's periodic recheck sees the change.
func (r *TriggerReconciler) Wake(key types.NamespacedName) {
	at := &exagentv1.AgentTrigger{}
	at.Namespace, at.Name = key.Namespace, key.Name
	select {
	case r.wake <- event.TypedGenericEvent[*exagentv1.AgentTrigger]{Object: at}:
	default:
	}
}

// SetupWithManager registers the controller: a trigger's spec or
// metadata change and its runs' start or end wake it.
func (r *TriggerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Name == "" {
		r.Name = "agenttrigger"
	}
	r.wake = make(chan event.TypedGenericEvent[*exagentv1.AgentTrigger], 1024)
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		For(&exagentv1.AgentTrigger{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&exagentv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(triggerOfRun),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: runEnded})).
		WatchesRawSource(source.Channel(r.wake, &handler.TypedEnqueueRequestForObject[*exagentv1.AgentTrigger]{})).
		Complete(quietConflicts{controller: r.Name, next: ownedOnly(r.Owner, shard.TriggerKey, r)})
}

// triggerOfRun is the trigger that owns a run, if any.
func triggerOfRun(_ context.Context, o client.Object) []reconcile.Request {
	if o.GetLabels()[exagentv1.LabelTrigger] == "" {
		return nil
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "AgentTrigger" && ref.APIVersion == exagentv1.GroupVersion.String() {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
		}
	}
	return nil
}

// Reconcile writes the trigger's Ready condition and active runs.
func (r *TriggerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	at := &exagentv1.AgentTrigger{}
	if err := r.Client.Get(ctx, req.NamespacedName, at); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ready, err := r.readiness(ctx, at)
	if err != nil {
		return reconcile.Result{}, err
	}
	tr := &triggers.Trigger{NamespacedName: req.NamespacedName, Generation: at.Generation}
	active := 0
	if ready.Status == metav1.ConditionTrue || ready.Reason == exagentv1.ReasonSuspended {
		if active, err = r.Runs.ActiveRuns(ctx, tr); err != nil {
			return reconcile.Result{}, err
		}
	}
	next := at.Status.DeepCopy()
	meta.SetStatusCondition(&next.Conditions, ready)
	next.ActiveRuns = int32(active)
	next.ObservedGeneration = at.Generation
	res := reconcile.Result{}
	if ready.Status != metav1.ConditionTrue {
		res.RequeueAfter = triggerRecheck
	}
	if equality.Semantic.DeepEqual(next, &at.Status) {
		return res, nil
	}
	was := meta.FindStatusCondition(at.Status.Conditions, exagentv1.ConditionReady)
	// A merge patch of our fields only (the counts are TriggerStats's),
	// carrying the resourceVersion read: a compare-and-swap, so a status
	// computed from a stale read is refused (Conflict) and recomputed.
	patch := client.MergeFromWithOptions(at.DeepCopy(), client.MergeFromWithOptimisticLock{})
	at.Status.Conditions, at.Status.ActiveRuns, at.Status.ObservedGeneration = next.Conditions, next.ActiveRuns, next.ObservedGeneration
	if err := r.Client.Status().Patch(ctx, at, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("writing AgentTrigger %s's status: %w", req.NamespacedName, err)
	}
	if ready.Status == metav1.ConditionFalse && (was == nil || was.Status != metav1.ConditionFalse || was.Reason != ready.Reason) && r.Recorder != nil {
		r.Recorder.Eventf(at, nil, corev1.EventTypeWarning, EventTriggerNotReady, "Check", "%s: %s", ready.Reason, ready.Message)
	}
	return res, nil
}

// readiness is the trigger's Ready condition; an error only when the
// cluster could not be read (the reconcile is retried).
func (r *TriggerReconciler) readiness(ctx context.Context, at *exagentv1.AgentTrigger) (metav1.Condition, error) {
	c := metav1.Condition{Type: exagentv1.ConditionReady, ObservedGeneration: at.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now())}
	_, err := r.Runs.Trigger(ctx, client.ObjectKeyFromObject(at))
	var p *TriggerProblem
	switch {
	case errors.As(err, &p):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, p.Reason, p.Error()
		return c, nil
	case err != nil:
		return c, err
	}
	if r.Events != nil && at.Spec.Source != nil && at.Spec.Source.KubernetesEvents != nil {
		if ps := r.Events.Problems(client.ObjectKeyFromObject(at)); len(ps) > 0 {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, exagentv1.ReasonEventsNotWatched, strings.Join(ps, "; ")
			return c, nil
		}
	}
	if at.Spec.Suspend {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, exagentv1.ReasonSuspended, "spec.suspend is true: events are counted and dropped"
		return c, nil
	}
	c.Status, c.Reason = metav1.ConditionTrue, exagentv1.ReasonTriggerReady
	c.Message = "events make runs"
	if at.Spec.Source != nil && at.Spec.Source.KubernetesEvents == nil {
		c.Message = fmt.Sprintf("deliveries to /triggers/%s/%s make runs", at.Namespace, at.Name)
	}
	return c, nil
}
