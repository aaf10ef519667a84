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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// releaseNamespace is where every rendering installs: config/'s namespace.
const releaseNamespace = "exagent-system"

func chartDir() string { return filepath.Join(testenv.RepoRoot(), "charts", "exagent") }

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir())
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return c
}

// render renders the chart's templates for values, as helm template would
// for an install of release "exagent" into releaseNamespace (values are
// checked against values.schema.json on the way). CRDs are not templates:
// see crdObjects.
func render(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	files, err := renderFiles(t, values)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(filepath.Base(name), "_") {
			continue
		}
		out = append(out, decode(t, name, []byte(files[name]))...)
	}
	return out
}

// renderErr is the error rendering values ends with, if any.
func renderErr(t *testing.T, values map[string]any) error {
	t.Helper()
	_, err := renderFiles(t, values)
	return err
}

func renderFiles(t *testing.T, values map[string]any) (map[string]string, error) {
	t.Helper()
	return renderChartFiles(loadChart(t), values)
}

// renderChartFiles renders c's templates for values: renderFiles, for a
// chart loaded (and perhaps changed) by the caller.
func renderChartFiles(c *chart.Chart, values map[string]any) (map[string]string, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	vals, err := chartutil.ToRenderValues(c, values, chartutil.ReleaseOptions{
		Name: "exagent", Namespace: releaseNamespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering: %w", err)
	}
	return files, nil
}

// crdObjects are the chart's crds/, which Helm installs before the templates.
func crdObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range loadChart(t).CRDObjects() {
		out = append(out, decode(t, f.Filename, f.File.Data)...)
	}
	if len(out) == 0 {
		t.Fatal("the chart has no CRDs")
	}
	return out
}

// kustomize builds a folder of config/ in-process (the kustomize API the
// pinned bin/kustomize is built from).
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(testenv.RepoRoot(), dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	b, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, dir, b)
}

// decode splits a YAML stream into objects, skipping empty documents.
func decode(t *testing.T, name string, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}

// key names an object in the messages of these tests.
func key(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + "/" + o.GetName()
	}
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		m[key(o)] = o
	}
	return m
}
