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

package chart

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

var prepareOnce sync.Once

// cluster returns the control plane with what an install of the chart
// expects to find: the namespaces it installs into and serves, and the CRDs
// of cert-manager and the Prometheus Operator (minimal copies).
func cluster(t *testing.T) *testenv.Env {
	t.Helper()
	env := control.Get()
	prepareOnce.Do(func() {
		ctx := context.Background()
		for _, ns := range []string{releaseNamespace, "team-a", "team-b"} {
			if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("namespace %s: %v", ns, err)
			}
		}
		root := testenv.RepoRoot()
		for _, f := range []string{
			filepath.Join(root, "test", "e2e", "testdata", "cert-manager-crds.yaml"),
			filepath.Join(root, "test", "chart", "testdata", "monitoring-crds.yaml"),
		} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range decode(t, f, b) {
				if err := env.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatalf("creating %s: %v", key(o), err)
				}
				waitEstablished(t, env.Client, o.GetName())
			}
		}
	})
	return env
}

// waitEstablished waits until the CRD is served.
func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			m := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not established: %v", name, err)
	}
}
