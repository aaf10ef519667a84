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
	"github.com/exagent-io/exagent/store"

	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// quietConflicts wraps a reconciler so that an optimistic-concurrency
// conflict — a write that lost its compare-and-swap because the object
// changed since it was read — is retried quietly: counted
// (exagent_reconcile_conflicts_total), logged at debug level, and the
// object looked at again shortly, on the newer version. It is the store
// working as designed, not an error; controller-runtime would log it as
// "Reconciler error" with a stack trace.
type quietConflicts struct {
	controller string
	next       reconcile.Reconciler
}

// Reconcile implements reconcile.Reconciler.
func (q quietConflicts) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := q.next.Reconcile(ctx, req)
	if err == nil || !isConflict(err) {
		return res, err
	}
	reconcileConflictsTotal.WithLabelValues(q.controller).Inc()
	logf.FromContext(ctx).V(1).Info("the object changed since it was read; looking again", "reason", err.Error())
	// The newer version's watch event usually comes first; this is the
	// fallback, jittered so that writers who lost together do not retry
	// together.
	return ctrl.Result{RequeueAfter: wait.Jitter(conflictRetry, 1), Priority: res.Priority}, nil
}

// isConflict reports whether err is a lost compare-and-swap: the
// apiserver's 409 Conflict or the store's ErrConflict.
func isConflict(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, store.ErrConflict)
}
