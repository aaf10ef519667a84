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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// probeGVK is the schemaless custom resource the probe writes: a status
// subresource and nothing validated, pruned or watched — what a plain
// status write costs an apiserver, the yardstick of issue 27.
var probeGVK = schema.GroupVersionKind{Group: "bench.exagent.io", Version: "v1", Kind: "Probe"}

// looseGVK is a second schemaless custom resource, for a finished run's
// status JSON written with no schema at all (BenchmarkFastApiserverCPU's
// "schemaless" shape): apart from the probe's objects, so neither
// measurement shares the other's objects or watch cache.
var looseGVK = schema.GroupVersionKind{Group: "bench.exagent.io", Version: "v1", Kind: "Loose"}

// installProbeCRD installs the Probe CRD (once per envtest; installing it
// again is a no-op) and waits until it is served.
func installProbeCRD(b *testing.B) { installSchemalessCRD(b, probeGVK) }

// installSchemalessCRD installs a namespaced CRD of kind gvk whose spec
// and status are objects kept as sent (x-kubernetes-preserve-unknown-
// fields: nothing pruned or validated below them) with a status
// subresource, and waits until it is served (envtest.InstallCRDs waits
// for it; installing it again is a no-op). Its plural is the kind's lower
// case with an s.
func installSchemalessCRD(b *testing.B, gvk schema.GroupVersionKind) {
	b.Helper()
	preserve := true
	singular := strings.ToLower(gvk.Kind)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: singular + "s." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: singular + "s", Singular: singular, Kind: gvk.Kind, ListKind: gvk.Kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvk.Version, Served: true, Storage: true,
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
	each := n / writers
	pad := strings.Repeat("x", 1500)
	wall := unstructuredStatusWrites(b, benchClient(b), probeGVK, ns, "probe", writers, each, map[string]any{"input": "x"},
		func(j int) map[string]any {
			return map[string]any{"phase": "Running", "attempts": int64(1), "message": fmt.Sprintf("%s%d", pad, j)}
		})
	return each * writers, float64(each*writers) / wall.Seconds()
}

// unstructuredStatusWrites creates writers objects of gvk in ns (named
// prefix-0…, with spec and nothing else but their name and namespace),
// then has writers writers write each its own object's status each times
// at once, status(j) the j-th (each write must differ from the last: an
// unchanged object is not stored). The objects are deleted after; it
// returns the writes' wall time. The objects are unstructured: the
// client sends exactly the JSON given, whatever the CRD's schema.
func unstructuredStatusWrites(b *testing.B, c client.Client, gvk schema.GroupVersionKind, ns, prefix string, writers, each int,
	spec map[string]any, status func(j int) map[string]any) time.Duration {
	b.Helper()
	ctx := context.Background()
	objs := make([]*unstructured.Unstructured, writers)
	for i := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(ns)
		u.SetName(fmt.Sprintf("%s-%d", prefix, i))
		must(b, unstructured.SetNestedField(u.Object, spec, "spec"))
		must(b, c.Create(ctx, u))
		objs[i] = u
	}
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, u := range objs {
		wg.Go(func() {
			for j := range each {
				must(b, unstructured.SetNestedField(u.Object, status(j), "status"))
				must(b, c.Status().Update(ctx, u))
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	for _, u := range objs {
		_ = c.Delete(ctx, u)
	}
	return wall
}

// installAgentRunCopy installs the AgentRun CRD of config/crd/bases under
// group (same schema, no short names or categories), edit applied to its
// spec's schema first (nil: as shipped), and returns its kind: for what a
// schema change costs, measured on one apiserver against the CRD as it is.
func installAgentRunCopy(b *testing.B, group string, edit func(spec *apiextensionsv1.JSONSchemaProps)) schema.GroupVersionKind {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "exagent.io_agentruns.yaml"))
	must(b, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(b, yaml.Unmarshal(raw, crd))
	crd.Name, crd.Spec.Group = "agentruns."+group, group
	crd.Spec.Names.ShortNames, crd.Spec.Names.Categories = nil, nil
	// The storage version alone: the copy measures a write, not a conversion.
	for _, sv := range crd.Spec.Versions {
		if sv.Storage {
			crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{sv}
			break
		}
	}
	v := &crd.Spec.Versions[0]
	if edit != nil {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		edit(&spec)
		v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	_, err = envtest.InstallCRDs(env().Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	must(b, err)
	return schema.GroupVersionKind{Group: group, Version: v.Name, Kind: crd.Spec.Names.Kind}
}
