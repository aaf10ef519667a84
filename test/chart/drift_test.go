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
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// helmLabels are the labels the chart adds to config/'s: Helm's own.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

// TestChartMatchesKustomize is the check that the chart cannot drift from
// config/ (make verify runs it): rendered with the values that mean the
// same install, the chart holds exactly the objects kustomize builds, field
// for field — less the Namespace (Helm installs into one, --create-namespace)
// and the CRDs (crds/ is config/crd/bases' copy: TestChartFilesAreConfig),
// with Helm's labels added and the image tagged with the release.
func TestChartMatchesKustomize(t *testing.T) {
	tests := map[string]struct {
		dirs   []string // kustomizations of config/
		files  []string // and plain manifests of config/
		values map[string]any
	}{
		"default values = config/default": {dirs: []string{"config/default"}},
		"watchNamespaces = config/namespaced-install": {
			dirs:   []string{"config/namespaced-install"},
			values: map[string]any{"watchNamespaces": []any{"team-a", "team-b"}},
		},
		"serviceMonitor and prometheusRules = config/default + config/prometheus": {
			dirs:  []string{"config/default", "config/prometheus"},
			files: []string{"config/prometheus/rules.yaml"},
			values: map[string]any{"metrics": map[string]any{
				"serviceMonitor": map[string]any{"enabled": true}, "prometheusRules": map[string]any{"enabled": true}}},
		},
	}
	appVersion := loadChart(t).Metadata.AppVersion
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var want []*unstructured.Unstructured
			for _, dir := range tc.dirs {
				want = append(want, kustomize(t, dir)...)
			}
			for _, f := range tc.files {
				b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), f))
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, decode(t, f, b)...)
			}
			got := render(t, tc.values)
			// Both run the release this tree is.
			checkImage(t, want, "ghcr.io/exagent-io/exagent:"+appVersion)
			checkImage(t, got, "ghcr.io/exagent-io/exagent:"+appVersion)
			compare(t, normalize(t, want, false), normalize(t, got, true))
		})
	}
}

// compare reports every object one side has and the other lacks, and every
// field that differs.
func compare(t *testing.T, want, got map[string]map[string]any) {
	t.Helper()
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		w, inConfig := want[k]
		g, inChart := got[k]
		switch {
		case !inChart:
			t.Errorf("the chart lacks %s, which config/ has: add it to charts/exagent/templates", k)
		case !inConfig:
			t.Errorf("the chart has %s, which config/ lacks", k)
		default:
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("%s differs from config/ (-config +chart):\n%s", k, diff)
			}
		}
	}
}

// normalize keys objects for comparison: no Namespace (Helm's release
// namespace) and no CRD, Helm's labels dropped from the chart's, every
// container image the same placeholder (checkImage checks them).
func normalize(t *testing.T, objs []*unstructured.Unstructured, chart bool) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition":
			if chart {
				t.Errorf("the chart renders %s: a Namespace or CRD among its templates", key(o))
			}
			continue
		}
		o = o.DeepCopy()
		if chart {
			labels := o.GetLabels()
			for _, l := range helmLabels {
				delete(labels, l)
			}
			o.SetLabels(labels)
		}
		if containers, ok, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers"); ok {
			for _, c := range containers {
				c.(map[string]any)["image"] = "IMAGE"
			}
			_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
		}
		if _, dup := out[key(o)]; dup {
			t.Errorf("%s twice", key(o))
		}
		out[key(o)] = o.Object
	}
	return out
}

// checkImage: the manager runs the release's image (never :latest): the
// chart's appVersion, which config/default's tag must equal.
func checkImage(t *testing.T, objs []*unstructured.Unstructured, want string) {
	t.Helper()
	n := 0
	for _, o := range objs {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			n++
			if img := c.(map[string]any)["image"]; img != want {
				t.Errorf("%s runs image %v, want %s", key(o), img, want)
			}
		}
	}
	if n == 0 {
		t.Error("the chart runs no container")
	}
}

// TestChartFilesAreConfig: what the chart takes from config/ byte for
// byte (hack/chart-files.sh, run by make manifests) is what config/ holds.
func TestChartFilesAreConfig(t *testing.T) {
	root := testenv.RepoRoot()
	pairs := map[string]string{}
	add := func(pattern, into string) {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v (%d files)", pattern, err, len(files))
		}
		for _, f := range files {
			rel, _ := filepath.Rel(root, f)
			pairs[rel] = filepath.Join(into, filepath.Base(f))
		}
	}
	add("config/crd/bases/*.yaml", "charts/exagent/crds")
	add("config/rbac/role.yaml", "charts/exagent/files/config/rbac")
	add("config/rbac/*_role.yaml", "charts/exagent/files/config/rbac")
	add("config/webhook/manifests.yaml", "charts/exagent/files/config/webhook")
	add("config/namespaced-install/cluster-role.yaml", "charts/exagent/files/config/namespaced-install")
	add("config/namespaced-install/served-namespace/role.yaml", "charts/exagent/files/config/namespaced-install/served-namespace")
	add("config/flowcontrol/flowcontrol.yaml", "charts/exagent/files/config/flowcontrol")
	add("config/policy/*-spec.yaml", "charts/exagent/files/config/policy")
	add("config/prometheus/*.yaml", "charts/exagent/files/config/prometheus")
	delete(pairs, filepath.Join("config", "prometheus", "kustomization.yaml"))
	for src, dst := range pairs {
		a, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, dst))
		if err != nil {
			t.Errorf("%s: %v: run make manifests", dst, err)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: run make manifests", dst, src)
		}
	}
	// Nothing else hides there.
	for _, dir := range []string{"charts/exagent/crds", "charts/exagent/files"} {
		_ = filepath.Walk(filepath.Join(root, dir), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				rel, _ := filepath.Rel(root, p)
				found := false
				for _, dst := range pairs {
					found = found || dst == rel
				}
				if !found && !strings.HasSuffix(rel, ".md") {
					t.Errorf("%s is no copy of config/: hack/chart-files.sh does not write it", rel)
				}
			}
			return nil
		})
	}
}
