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
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/version"
)

// unknownFormat handles a run whose journal a newer release wrote
// (status.formatVersion above exagentv1.JournalFormat): the manager must
// not guess what its fields mean, so it neither drives nor rewrites it.
// It says so once — the Ready condition False with reason UnknownFormat,
// by a merge patch of the conditions alone fenced by the version read,
// and a Warning Event — and waits for the run to change (the newer
// manager back, or the run deleted); no requeue.
func (r *AgentRunReconciler) unknownFormat(ctx context.Context, run *exagentv1.AgentRun) error {
	log := logf.FromContext(ctx)
	if c := meta.FindStatusCondition(run.Status.Conditions, exagentv1.ConditionReady); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == exagentv1.ReasonUnknownFormat {
		return nil // said already
	}
	msg := fmt.Sprintf("the run's journal is format %d and this manager (%s) reads formats up to %d: it is left as it is; "+
		"run the release that wrote it, or a later one (docs/upgrading.md)", run.Status.Format(), version.Get().Version, exagentv1.JournalFormat)
	conds := append([]metav1.Condition(nil), run.Status.Conditions...)
	meta.SetStatusCondition(&conds, metav1.Condition{
		Type: exagentv1.ConditionReady, Status: metav1.ConditionFalse, Reason: exagentv1.ReasonUnknownFormat,
		Message: msg, ObservedGeneration: run.Status.ObservedGeneration, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": run.ResourceVersion},
		"status":   map[string]any{"conditions": conds},
	})
	if err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, run, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("marking run %s/%s UnknownFormat: %w", run.Namespace, run.Name, err)
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(run, nil, warning, exagentv1.ReasonUnknownFormat, "Skip", "%s", msg)
	}
	log.Info("run left untouched: its journal is of a newer format", "format", run.Status.Format(), "known", exagentv1.JournalFormat)
	return nil
}
