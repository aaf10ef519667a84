//go:build scale

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

package scale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// agentName is the one Agent of every namespace.
const agentName = "scale"

// namespaces are the runs' namespaces.
func namespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("scale-%02d", i)
	}
	return out
}

// installFixtures creates the namespaces and alice's right to list and
// approve everywhere: a ClusterRoleBinding to config/rbac's
// exagent-approver, so that `kubectl approve list -A` is hers to run.
func installFixtures(ctx context.Context, c client.Client, nss []string) error {
	objs := []client.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-approves"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "exagent-approver"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: alice}}}}
	for _, ns := range nss {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	return createAll(ctx, c, objs)
}

// installAgents creates each namespace's Agent — the slow model, charge
// (asks a person, not idempotent) and journal (allowed, idempotent) on
// the tool server — once a manager serves admission (Agents are
// validated by its webhook).
func installAgents(ctx context.Context, c client.Client, nss []string, modelURL, toolURL string) error {
	var objs []client.Object
	for _, ns := range nss {
		charge := fixture.HTTPTool(toolCharge, toolURL+"/"+toolCharge)
		journal := fixture.HTTPTool(toolJournal, toolURL+"/"+toolJournal)
		journal.HTTP.Idempotent = true
		objs = append(objs, &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: agentName, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Instructions: "You are the scale test's agent.",
			Model:        exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "scale-model", BaseURL: modelURL},
			Tools:        []exagentv1.ToolSpec{charge, journal},
			Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow, Rules: []exagentv1.PolicyRule{
				{Name: "ask-before-charging", Tools: []string{toolCharge}, Action: exagentv1.PolicyAsk}}},
		}})
	}
	return createAll(ctx, c, objs)
}

func createAll(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, o := range objs {
		if err := createOne(ctx, c, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// runObject is run name of kind (its name's prefix) in ns.
func runObject(ns, name string) *exagentv1.AgentRun {
	return &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: agentName},
			Input:         runInputPrefix + ns + "/" + name,
			LeaseDuration: exagentv1.Duration(flagLease.String())}}
}

// runNames are n runs of prefix spread over nss round robin.
func runNames(prefix string, n int, nss []string) []client.ObjectKey {
	out := make([]client.ObjectKey, n)
	for i := range out {
		out[i] = client.ObjectKey{Namespace: nss[i%len(nss)], Name: fmt.Sprintf("%s%05d", prefix, i)}
	}
	return out
}

// interleave is a and b mixed evenly (the burst creates ended and waiting
// runs together, as a busy cluster does).
func interleave(a, b []client.ObjectKey) []client.ObjectKey {
	out := make([]client.ObjectKey, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		// Take from the list that is behind its share.
		if j >= len(b) || (i < len(a) && i*len(b) <= j*len(a)) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	return out
}

// createRuns creates keys with creators concurrent clients (a client per
// 8 of them: several connections, as several writers have), retrying what
// fails for a passing reason (admission briefly unavailable, the
// apiserver's priority and fairness asking to wait); it returns the wall
// time of the creations.
func createRuns(ctx context.Context, cfg *rest.Config, keys []client.ObjectKey, creators int) (time.Duration, error) {
	clients := make([]client.Client, (creators+7)/8)
	for i := range clients {
		c, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			return 0, fmt.Errorf("creator client: %w", err)
		}
		clients[i] = c
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	t0 := time.Now()
	for w := range creators {
		c := clients[w/8]
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(keys) {
					return
				}
				if err := createOne(ctx, c, runObject(keys[i].Namespace, keys[i].Name)); err != nil {
					errMu.Lock()
					firstErr = errors.Join(firstErr, err)
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(t0), firstErr
}

// createOne creates o, retrying for five minutes what may pass (a
// manager restarted after its leader election was lost takes its Lease
// and its cache's sync to serve admission again); an object that exists
// already was created by an earlier attempt whose answer was lost.
func createOne(ctx context.Context, c client.Client, o client.Object) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := c.Create(ctx, o.DeepCopyObject().(client.Object))
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "webhook") {
			return fmt.Errorf("creating %s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probeGVK is the schemaless custom resource of the write ceiling: a
// status subresource and nothing validated, pruned or watched — what a
// plain status write costs this apiserver (controllers/fastbench_probe_test.go).
var probeGVK = schema.GroupVersionKind{Group: "bench.exagent.io", Version: "v1", Kind: "Probe"}

func installProbeCRD(cfg *rest.Config) error {
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "probes." + probeGVK.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: probeGVK.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "probes", Singular: "probe", Kind: probeGVK.Kind, ListKind: probeGVK.Kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: probeGVK.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", XPreserveUnknownFields: &preserve},
						"status": {Type: "object", XPreserveUnknownFields: &preserve},
					},
				}},
			}},
		},
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		return fmt.Errorf("installing the probe CRD: %w", err)
	}
	return nil
}

// probeWrites is the write ceiling: writers writers, each on its own
// Probe, write its status each times at once — a phase, an attempt count
// and a 1.5 KB message that changes each write (about 2 KiB an object) —
// by compare-and-swap (the resourceVersion of the last write). It returns
// the writes made and their wall time.
func probeWrites(ctx context.Context, cfg *rest.Config, ns string, writers, each int) (int, time.Duration, error) {
	c, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		return 0, 0, err
	}
	objs := make([]*unstructured.Unstructured, writers)
	for i := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(probeGVK)
		u.SetNamespace(ns)
		u.SetName(fmt.Sprintf("probe-%d", i))
		if err := unstructured.SetNestedField(u.Object, map[string]any{"input": "x"}, "spec"); err != nil {
			return 0, 0, err
		}
		if err := c.Create(ctx, u); err != nil {
			return 0, 0, fmt.Errorf("creating probe %d: %w", i, err)
		}
		objs[i] = u
	}
	pad := strings.Repeat("x", 1500)
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	t0 := time.Now()
	for _, u := range objs {
		wg.Go(func() {
			for j := range each {
				st := map[string]any{"phase": "Running", "attempts": int64(1), "message": fmt.Sprintf("%s%d", pad, j)}
				err := unstructured.SetNestedField(u.Object, st, "status")
				if err == nil {
					err = c.Status().Update(ctx, u)
				}
				if err != nil {
					errMu.Lock()
					firstErr = errors.Join(firstErr, fmt.Errorf("probe write: %w", err))
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	for _, u := range objs {
		_ = c.Delete(ctx, u)
	}
	return writers * each, wall, firstErr
}
