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
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/schedule"
	"github.com/exagent-io/exagent/internal/shard"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agentschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=exagent.io,resources=agentschedules/status,verbs=get;update
// +kubebuilder:rbac:groups=exagent.io,resources=agentschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=exagent.io,resources=agentruns,verbs=create;delete;patch

// Events of schedules.
const (
	EventScheduleRunCreated = "RunCreated"
	EventScheduleSkipped    = "TickSkipped"
	EventScheduleMissed     = "TickMissed"
	EventScheduleInvalid    = "InvalidSchedule"
	EventScheduleRunRefused = "RunRefused"
)

// ScheduleReconciler makes an AgentSchedule's runs (DESIGN §19): at most
// one per tick, named from the tick (schedule.RunName), so a restart, a
// second replica or a lost reply to a Create never makes two — the second
// Create is AlreadyExists. The decisions are internal/schedule's; this
// file reads the objects and writes the results.
type ScheduleReconciler struct {
	// Owner says which of these objects this manager writes (shards.go).
	Owner    Ownership
	Client   client.Client
	Recorder events.EventRecorder
	// Clock is "now" for every tick decision (tests inject a fake one).
	Clock clock.PassiveClock
	// Signer, when set, makes a schedule tick only with the admission
	// webhook's seal on its setter (authz.Signer.VerifySchedule).
	Signer *authz.Signer
	Name   string
}

// SetupWithManager registers the controller: a schedule's spec or
// metadata change and its runs' creation, end or deletion wake it, never
// its own status writes.
func (r *ScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Name == "" {
		r.Name = "agentschedule"
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		For(&exagentv1.AgentSchedule{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// Its runs by label, not by owner: a manual run (kubectl approve
		// schedule run) is the schedule's too, without being controlled.
		Watches(&exagentv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(scheduleOfRun),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: runEnded})).
		// Two replicas' status writes may race: the loser looks again.
		Complete(quietConflicts{controller: r.Name, next: ownedOnly(r.Owner, shard.ScheduleKey, r)})
}

// scheduleOfRun is the schedule a run is labelled with, if any.
func scheduleOfRun(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[exagentv1.LabelSchedule]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// runEnded passes a run's update only when its phase changed to or from an
// ended one: the schedule's active list and history change then, not at
// each of the run's status writes.
func runEnded(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*exagentv1.AgentRun)
	cur, ok2 := e.ObjectNew.(*exagentv1.AgentRun)
	return ok1 && ok2 && old.Status.Phase.IsTerminal() != cur.Status.Phase.IsTerminal()
}

// Reconcile observes the schedule's runs, prunes its history and acts on
// the tick due now, then asks to be woken at the next tick.
func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sched := &exagentv1.AgentSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, sched); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sched.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx).WithValues("schedule", sched.Name)
	ctx = logf.IntoContext(ctx, log)
	runs, err := r.runsOf(ctx, sched)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := sched.Status.DeepCopy()
	next.ObservedGeneration = sched.Generation
	open, ended := splitRuns(runs)
	if err := r.prune(ctx, sched, ended); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.tick(ctx, sched, next, open)
	if err != nil {
		return ctrl.Result{}, err
	}
	setActive(next, open)
	if !equality.Semantic.DeepEqual(&sched.Status, next) {
		sched.Status = *next
		if err := r.Client.Status().Update(ctx, sched); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing the status of schedule %s/%s: %w", sched.Namespace, sched.Name, err)
		}
	}
	return res, nil
}

// tick acts on the tick due now, recording in next what it did.
func (r *ScheduleReconciler) tick(ctx context.Context, sched *exagentv1.AgentSchedule, next *exagentv1.AgentScheduleStatus, open []exagentv1.AgentRun) (ctrl.Result, error) {
	s, err := schedule.Parse(sched.Spec.Schedule, sched.Spec.TimeZone)
	if err != nil {
		// Admission refuses this; a schedule written past it says so and
		// waits for its spec to change (which wakes it).
		r.Recorder.Eventf(sched, nil, corev1.EventTypeWarning, EventScheduleInvalid, "Tick", "%v", err)
		setReady(next, metav1.ConditionFalse, exagentv1.ReasonInvalidSchedule, fmt.Sprintf("%v: fix spec.schedule or spec.timeZone", err))
		next.NextScheduleTime = nil
		return ctrl.Result{}, nil
	}
	if sched.Spec.Suspend != nil && *sched.Spec.Suspend {
		setReady(next, metav1.ConditionFalse, exagentv1.ReasonSuspended, "spec.suspend is true: no tick creates a run; runs already created go on")
		next.NextScheduleTime = nil
		return ctrl.Result{}, nil
	}
	by, err := SpecSetter(sched)
	if err == nil && r.Signer != nil {
		err = r.Signer.VerifySchedule(sched)
	}
	if err != nil {
		setReady(next, metav1.ConditionFalse, exagentv1.ReasonNoRequester, fmt.Sprintf(
			"%v: its runs would act for nobody; apply the schedule's spec again through the exagent admission webhook", err))
		next.NextScheduleTime = nil
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	var last time.Time
	if next.LastScheduleTime != nil {
		last = next.LastScheduleTime.Time
	}
	var deadline time.Duration
	if d := sched.Spec.StartingDeadlineSeconds; d != nil {
		deadline = time.Duration(*d) * time.Second
	}
	due := s.FindDue(last, sched.CreationTimestamp.Time, now, deadline)
	msg := ""
	switch {
	case !due.Late.IsZero():
		msg = fmt.Sprintf("the tick of %s was skipped: it is %s late, past spec.startingDeadlineSeconds (%s)",
			due.Late.UTC().Format(time.RFC3339), now.Sub(due.Late).Round(time.Second), deadline)
		r.Recorder.Eventf(sched, nil, corev1.EventTypeWarning, EventScheduleMissed, "Tick", "%s", msg)
		next.LastScheduleTime = &metav1.Time{Time: due.Late}
	case !due.Tick.IsZero():
		created, what, err := r.act(ctx, sched, by, due, open)
		var refused *runRefusedError
		switch {
		case errors.As(err, &refused):
			// Retrying the same Create would be refused again: the tick is
			// skipped, and the condition says why until a tick succeeds.
			r.Recorder.Eventf(sched, nil, corev1.EventTypeWarning, EventScheduleRunRefused, "Tick", "%s", refused.Error())
			next.LastScheduleTime = &metav1.Time{Time: due.Tick}
			next.NextScheduleTime = &metav1.Time{Time: due.Next}
			setReady(next, metav1.ConditionFalse, exagentv1.ReasonRunRefused, fmt.Sprintf("%s; the next tick at %s tries again",
				refused.Error(), due.Next.UTC().Format(time.RFC3339)))
			return ctrl.Result{RequeueAfter: max(due.Next.Sub(now), time.Second)}, nil
		case err != nil:
			return ctrl.Result{}, err
		}
		msg = what
		next.LastScheduleTime = &metav1.Time{Time: due.Tick}
		if created {
			next.LastRun = schedule.RunName(sched.Name, due.Tick)
		}
	}
	next.NextScheduleTime = &metav1.Time{Time: due.Next}
	if msg == "" {
		if c := meta.FindStatusCondition(next.Conditions, exagentv1.ConditionReady); c != nil && c.Reason == exagentv1.ReasonRunRefused {
			// The refusal stands until a tick acts again.
			return ctrl.Result{RequeueAfter: max(due.Next.Sub(now), time.Second)}, nil
		}
		msg = "waiting for the next tick"
	}
	setReady(next, metav1.ConditionTrue, exagentv1.ReasonScheduled, fmt.Sprintf("%s; next tick at %s", msg, due.Next.UTC().Format(time.RFC3339)))
	return ctrl.Result{RequeueAfter: max(due.Next.Sub(now), time.Second)}, nil
}
