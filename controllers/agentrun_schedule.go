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
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// replaceScheduled ends a run of a Replace schedule that a newer run of
// the same schedule replaces (loop.Replace, as a cancel: a call in flight
// becomes Uncertain, never repeated). The schedule controller marks the
// run (exagentv1.AnnotationReplacedBy) once it created the new one; the
// mark is only a hint that wakes this run: the replacement is
// applied only when the schedule says Replace and the named run exists,
// is a run of the same schedule and is newer. It runs before recover, so
// a run another replica owns is replaced too (its claim revoked by this
// write's compare-and-swap).
func (r *AgentRunReconciler) replaceScheduled(ctx context.Context, sc *scope) error {
	by := sc.run.Annotations[exagentv1.AnnotationReplacedBy]
	name := sc.run.Labels[exagentv1.LabelSchedule]
	if by == "" || name == "" || sc.env == nil || sc.status.Phase == "" || sc.status.Phase.IsTerminal() {
		return nil
	}
	sched := &exagentv1.AgentSchedule{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: sc.run.Namespace, Name: name}, sched); err != nil {
		return client.IgnoreNotFound(err)
	}
	if sched.Spec.ConcurrencyPolicy != exagentv1.ConcurrencyReplace {
		return nil
	}
	newer := &exagentv1.AgentRun{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: sc.run.Namespace, Name: by}, newer); err != nil {
		return client.IgnoreNotFound(err)
	}
	if newer.Labels[exagentv1.LabelSchedule] != name || newer.Name == sc.run.Name || newer.CreationTimestamp.Before(&sc.run.CreationTimestamp) {
		return nil
	}
	next, err := loop.Replace(sc.status, sc.env, newer.Name, name, sc.now)
	if err != nil {
		return fmt.Errorf("replacing the run: %w", err)
	}
	sc.set(next)
	sc.note(exagentv1.EventRunFailed, warning, "%s", next.Message)
	sc.stop = true
	return nil
}
