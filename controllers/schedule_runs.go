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
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/schedule"
)

// SpecSetter is the person admission recorded as the last to set the
// schedule's spec (exagentv1.AnnotationSpecSetBy): its runs are requested
// by them.
func SpecSetter(sched *exagentv1.AgentSchedule) (*exagentv1.Actor, error) {
	raw, ok := sched.Annotations[exagentv1.AnnotationSpecSetBy]
	if !ok {
		return nil, fmt.Errorf("the schedule has no %s annotation", exagentv1.AnnotationSpecSetBy)
	}
	var a exagentv1.Actor
	if err := json.Unmarshal([]byte(raw), &a); err != nil || a.Username == "" {
		return nil, fmt.Errorf("the schedule's %s annotation is not an actor: %q", exagentv1.AnnotationSpecSetBy, raw)
	}
	return &a, nil
}

// runsOf lists the schedule's runs (scheduled and manual) by their label.
func (r *ScheduleReconciler) runsOf(ctx context.Context, sched *exagentv1.AgentSchedule) ([]exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(sched.Namespace),
		client.MatchingLabels{exagentv1.LabelSchedule: exagentv1.LabelValue(sched.Name)}); err != nil {
		return nil, fmt.Errorf("listing the runs of schedule %s/%s: %w", sched.Namespace, sched.Name, err)
	}
	return list.Items, nil
}

// splitRuns parts runs into those open (not ended) and those ended.
func splitRuns(runs []exagentv1.AgentRun) (open, ended []exagentv1.AgentRun) {
	for i := range runs {
		if runs[i].Status.Phase.IsTerminal() {
			ended = append(ended, runs[i])
		} else if runs[i].DeletionTimestamp.IsZero() {
			open = append(open, runs[i])
		}
	}
	return open, ended
}

// act does what the due tick asks (schedule.Act): skip it for an open run
// (Forbid), or create its run and then mark the open ones the new run
// replaces (Replace). created says whether the tick's run exists now.
func (r *ScheduleReconciler) act(ctx context.Context, sched *exagentv1.AgentSchedule, by *exagentv1.Actor,
	due schedule.Due, open []exagentv1.AgentRun) (created bool, msg string, err error) {
	name := schedule.RunName(sched.Name, due.Tick)
	names := make([]string, 0, len(open))
	for i := range open {
		names = append(names, open[i].Name)
	}
	a := schedule.Act(schedule.Policy(policyOf(sched)), names, name)
	tick := due.Tick.UTC().Format(time.RFC3339)
	if len(a.SkippedFor) > 0 {
		msg = fmt.Sprintf("the tick of %s was skipped: run %s has not ended (spec.concurrencyPolicy Forbid)", tick, strings.Join(a.SkippedFor, ", "))
		r.Recorder.Eventf(sched, nil, corev1.EventTypeNormal, EventScheduleSkipped, "Tick", "%s", msg)
		return false, msg, nil
	}
	run := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   sched.Namespace,
			Name:        name,
			Labels:      map[string]string{exagentv1.LabelSchedule: exagentv1.LabelValue(sched.Name)},
			Annotations: map[string]string{exagentv1.AnnotationScheduledTime: tick},
		},
		Spec: sched.Spec.RunTemplate.RunSpec(by),
	}
	if err := controllerutil.SetControllerReference(sched, run, r.Client.Scheme()); err != nil {
		return false, "", fmt.Errorf("owning run %s by schedule %s: %w", name, sched.Name, err)
	}
	switch err := r.Client.Create(ctx, run); {
	case err == nil:
		r.Recorder.Eventf(sched, run, corev1.EventTypeNormal, EventScheduleRunCreated, "Tick", "created run %s for the tick of %s", name, tick)
		logf.FromContext(ctx).Info("created a scheduled run", "run", name, "tick", tick, "missed", due.Missed)
	case apierrors.IsAlreadyExists(err):
		// An earlier attempt at this tick (a lost reply, another replica).
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
		return false, "", &runRefusedError{run: name, tick: tick, err: err}
	default:
		return false, "", fmt.Errorf("creating run %s for the tick of %s: %w", name, tick, err)
	}
	msg = fmt.Sprintf("run %s created for the tick of %s", name, tick)
	if due.Missed > 0 {
		msg += fmt.Sprintf(" (%d earlier missed ticks were not run)", due.Missed)
	}
	if err := r.replace(ctx, sched, name, a.Replace); err != nil {
		return true, "", err
	}
	if len(a.Replace) > 0 {
		msg += fmt.Sprintf("; replacing %s", strings.Join(a.Replace, ", "))
	}
	return true, msg, nil
}

// replace marks the runs the tick's run replaces: the run controller
// cancels each (controllers/agentrun_schedule.go). A mark is metadata,
// written as a merge patch: it never conflicts with the run's own writes.
func (r *ScheduleReconciler) replace(ctx context.Context, sched *exagentv1.AgentSchedule, by string, runs []string) error {
	for _, name := range runs {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, exagentv1.AnnotationReplacedBy, by)
		run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: sched.Namespace, Name: name}}
		if err := r.Client.Patch(ctx, run, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("marking run %s replaced by %s: %w", name, by, err)
		}
	}
	return nil
}

// prune deletes the schedule's ended runs beyond its history limits.
func (r *ScheduleReconciler) prune(ctx context.Context, sched *exagentv1.AgentSchedule, ended []exagentv1.AgentRun) error {
	views := make([]schedule.Ended, 0, len(ended))
	for i := range ended {
		at := ended[i].CreationTimestamp.Time
		if c := meta.FindStatusCondition(ended[i].Status.Conditions, exagentv1.ConditionEnded); c != nil {
			at = c.LastTransitionTime.Time
		}
		views = append(views, schedule.Ended{Name: ended[i].Name, Succeeded: ended[i].Status.Phase == exagentv1.PhaseSucceeded, At: at})
	}
	var errs []error
	for _, name := range schedule.Prune(views, limit(sched.Spec.SuccessfulRunsHistoryLimit, 3), limit(sched.Spec.FailedRunsHistoryLimit, 1)) {
		run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: sched.Namespace, Name: name}}
		if err := r.Client.Delete(ctx, run, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting run %s beyond the history limits of schedule %s: %w", name, sched.Name, err))
		}
	}
	return errors.Join(errs...)
}

func limit(v *int32, def int) int {
	if v == nil {
		return def
	}
	return int(*v)
}

func policyOf(sched *exagentv1.AgentSchedule) exagentv1.ConcurrencyPolicy {
	if sched.Spec.ConcurrencyPolicy == "" {
		return exagentv1.ConcurrencyAllow
	}
	return sched.Spec.ConcurrencyPolicy
}

// setActive records the open runs (at most exagentv1.MaxScheduleActive
// names; activeCount counts them all).
func setActive(st *exagentv1.AgentScheduleStatus, open []exagentv1.AgentRun) {
	st.Active = nil
	for i := range open {
		if len(st.Active) < exagentv1.MaxScheduleActive {
			st.Active = append(st.Active, open[i].Name)
		}
	}
	st.ActiveCount = int32(len(open))
}

func setReady(st *exagentv1.AgentScheduleStatus, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: exagentv1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: st.ObservedGeneration,
	})
}

// runRefusedError is admission's refusal of a tick's run: retrying the
// same Create would be refused again, so the tick is skipped and the
// schedule says why (ReasonRunRefused).
type runRefusedError struct {
	run, tick string
	err       error
}

func (e *runRefusedError) Error() string {
	return fmt.Sprintf("the run %s for the tick of %s was refused: %v", e.run, e.tick, e.err)
}

func (e *runRefusedError) Unwrap() error { return e.err }
