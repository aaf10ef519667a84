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

package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// probeGVK is the schemaless custom resource the probe writes: a status
// subresource and nothing validated, pruned or watched — what a plain
// status write costs an apiserver, the yardstick of issue 27.
var probeGVK = schema.GroupVersionKind{Group: "bench.exagent.io", Version: "v1", Kind: "Probe"}

// installProbeCRD installs the Probe CRD (once per envtest; installing it
// again is a no-op) and waits until it is served.
func installProbeCRD(b *testing.B) {
	b.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "probes.bench.exagent.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: probeGVK.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "probes", Singular: "probe", Kind: probeGVK.Kind, ListKind: "ProbeList"},
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
	_, err := envtest.InstallCRDs(env().Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	must(b, err)
}

// probeStatusWrites is the probe: writers writers, each on its own
// Probe, write its status n/writers times — a phase, an attempt count
// and a 1.5 KB message that changes each write (about 2 KiB an object,
// the unit of measureCAS). It returns the writes made and the ceiling.
func probeStatusWrites(b *testing.B, ns string, n, writers int) (int, float64) {
	b.Helper()
	installProbeCRD(b)
	c := benchClient(b)
	ctx := context.Background()
	each := n / writers
	pad := strings.Repeat("x", 1500)
	objs := make([]*unstructured.Unstructured, writers)
	for i := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(probeGVK)
		u.SetNamespace(ns)
		u.SetName(fmt.Sprintf("probe-%d", i))
		must(b, unstructured.SetNestedField(u.Object, map[string]any{"input": "x"}, "spec"))
		must(b, c.Create(ctx, u))
		objs[i] = u
	}
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, u := range objs {
		wg.Go(func() {
			for j := range each {
				status := map[string]any{"phase": "Running", "attempts": int64(1), "message": fmt.Sprintf("%s%d", pad, j)}
				must(b, unstructured.SetNestedField(u.Object, status, "status"))
				must(b, c.Status().Update(ctx, u))
			}
		})
	}
	wg.Wait()
	ceiling := float64(each*writers) / time.Since(t0).Seconds()
	for _, u := range objs {
		_ = c.Delete(ctx, u)
	}
	return each * writers, ceiling
}
