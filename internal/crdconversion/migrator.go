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

package crdconversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=patch,resourceNames=agents.exagent.io;agentruns.exagent.io;approvaldecisions.exagent.io;agentrunsegments.exagent.io;conversations.exagent.io;agentschedules.exagent.io;agenttriggers.exagent.io;agentbudgets.exagent.io
// +kubebuilder:rbac:groups=storagemigration.k8s.io,resources=storageversionmigrations,verbs=get;create
// +kubebuilder:rbac:groups=exagent.io,resources=agentrunsegments,verbs=patch

// Migrator rewrites what an older release stored in another version into
// the storage version, then prunes the CRD's status.storedVersions to it,
// so a later release may stop serving the old version. Where the cluster
// serves storagemigration.k8s.io/v1 it creates one StorageVersionMigration
// per CRD, which kube-controller-manager's storage-version-migrator
// carries out, and waits for it; elsewhere it rewrites the objects itself,
// a page at a time at Rate objects a second. It runs on the leader.
type Migrator struct {
	// Client reads CRDs, StorageVersionMigrations and the objects; its
	// scheme has apiextensions.k8s.io/v1 and storagemigration.k8s.io/v1.
	Client client.Client
	// Rate is the objects a second the manager's own rewrite goes at (50
	// if 0); Poll how often a migration is looked at (5 s if 0).
	Rate float64
	Poll time.Duration
	Log  logr.Logger
}

// NeedLeaderElection is true: one manager migrates.
func (m *Migrator) NeedLeaderElection() bool { return true }

// Start migrates every CRD of CRDs at once — each migration waits on
// kube-controller-manager, so one after another would add their waits —
// and returns when all are done or ctx ends.
func (m *Migrator) Start(ctx context.Context) error {
	poll := m.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	pending := slices.Clone(CRDs)
	_ = wait.PollUntilContextCancel(ctx, poll, true, func(ctx context.Context) (bool, error) {
		pending = slices.DeleteFunc(pending, func(name string) bool {
			done, err := m.Migrate(ctx, name)
			if err != nil {
				m.Log.Error(err, "storage migration", "crd", name)
			}
			return done
		})
		return len(pending) == 0, nil
	})
	return nil // done, or ctx ended
}

// Migrate takes CRD name one step towards storedVersions == [storage]
// and reports whether it is there.
func (m *Migrator) Migrate(ctx context.Context, name string) (bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.Client.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	storage := StorageVersion(crd)
	if storage == "" {
		return false, fmt.Errorf("CRD %s has no storage version", name)
	}
	if len(crd.Status.StoredVersions) == 1 && crd.Status.StoredVersions[0] == storage {
		return true, nil
	}
	svm := &storagemigrationv1.StorageVersionMigration{}
	svmName := MigrationName(crd, storage)
	err := m.Client.Get(ctx, types.NamespacedName{Name: svmName}, svm)
	switch {
	case meta.IsNoMatchError(err) || isNotServed(err, svmName):
		// No storagemigration.k8s.io/v1 here: the manager rewrites.
		if err := m.rewrite(ctx, crd, storage); err != nil {
			return false, err
		}
	case apierrors.IsNotFound(err):
		svm = &storagemigrationv1.StorageVersionMigration{
			ObjectMeta: metav1.ObjectMeta{Name: svmName, Labels: map[string]string{"app.kubernetes.io/managed-by": "exagent"}},
			Spec:       storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}},
		}
		if err := m.Client.Create(ctx, svm); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating StorageVersionMigration %s: %w", svmName, err)
		}
		m.Log.Info("storage migration started", "crd", name, "storageVersionMigration", svmName, "from", crd.Status.StoredVersions, "to", storage)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading StorageVersionMigration %s: %w", svmName, err)
	default:
		if c := meta.FindStatusCondition(svm.Status.Conditions, string(storagemigrationv1.MigrationFailed)); c != nil && c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("StorageVersionMigration %s failed: %s (delete it to try again)", svmName, c.Message)
		}
		if c := meta.FindStatusCondition(svm.Status.Conditions, string(storagemigrationv1.MigrationSucceeded)); c == nil || c.Status != metav1.ConditionTrue {
			return false, nil // still running
		}
	}
	return true, m.prune(ctx, crd, storage)
}

// prune sets status.storedVersions to the storage version alone, fenced
// by the CRD's resourceVersion.
func (m *Migrator) prune(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": crd.ResourceVersion},
		"status":   map[string]any{"storedVersions": []string{storage}},
	})
	if err != nil {
		return err
	}
	if err := m.Client.Status().Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("pruning the stored versions of CRD %s: %w", crd.Name, err)
	}
	m.Log.Info("storage migration done", "crd", crd.Name, "storedVersions", []string{storage})
	return nil
}

// rewrite writes every object of crd once, unchanged: the apiserver
// encodes it in the storage version, so it is stored as that version.
// The write is its status as read (an empty merge patch for a kind with
// no status), fenced by the object's resourceVersion: a conflict means
// someone wrote it since, which migrated it too.
func (m *Migrator) rewrite(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage string) error {
	rate := m.Rate
	if rate <= 0 {
		rate = 50
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + storage)
	list.SetKind(crd.Spec.Names.ListKind)
	hasStatus := false
	for _, v := range crd.Spec.Versions {
		if v.Name == storage && v.Subresources != nil && v.Subresources.Status != nil {
			hasStatus = true
		}
	}
	cont := ""
	n := 0
	for {
		if err := m.Client.List(ctx, list, client.Limit(100), client.Continue(cont)); err != nil {
			return fmt.Errorf("listing %s: %w", crd.Spec.Names.Plural, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			var err error
			if hasStatus {
				// The status as read, written back: the manager writes
				// every kind's status already, and the apiserver stores
				// the whole object again.
				err = m.Client.Status().Update(ctx, o)
			} else {
				patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q}}`, o.GetResourceVersion())
				err = m.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, patch))
			}
			if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return fmt.Errorf("rewriting %s %s/%s: %w", crd.Spec.Names.Kind, o.GetNamespace(), o.GetName(), err)
			}
			n++
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	m.Log.Info("objects rewritten in the storage version", "crd", crd.Name, "objects", n, "version", storage)
	return nil
}

// StorageVersion is the version crd stores.
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// MigrationName names the StorageVersionMigration of crd to storage: one
// per CRD and target version, so a later storage version makes a new one.
func MigrationName(crd *apiextensionsv1.CustomResourceDefinition, storage string) string {
	return fmt.Sprintf("exagent-%s-to-%s", crd.Spec.Names.Plural, storage)
}

// isNotServed is a 404 for the storagemigration API itself rather than
// for the named migration: a cluster that does not serve the resource.
func isNotServed(err error, name string) bool {
	var s apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &s) {
		return false
	}
	d := s.Status().Details
	return d == nil || d.Name != name
}
