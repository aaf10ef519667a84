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

package v1beta1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestEveryCRDServesBothVersions checks what docs/upgrading.md promises of
// every generated CRD: v1beta1 served and stored; v1alpha1 served,
// deprecated with a warning naming its replacement, never stored; and the
// two with one schema, subresources, printer columns and selectable
// fields, so the conversion between them has nothing to lose (the round
// trip is fuzzed in api/v1alpha1).
func TestEveryCRDServesBothVersions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "exagent.io_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.Unmarshal(b, &crd); err != nil {
				t.Fatal(err)
			}
			versions := map[string]apiextensionsv1.CustomResourceDefinitionVersion{}
			for _, v := range crd.Spec.Versions {
				versions[v.Name] = v
			}
			alpha, okA := versions["v1alpha1"]
			beta, okB := versions[GroupVersion.Version]
			if len(versions) != 2 || !okA || !okB {
				t.Fatalf("versions %v, want v1alpha1 and v1beta1", crd.Spec.Versions)
			}
			if !beta.Served || !beta.Storage || beta.Deprecated {
				t.Errorf("v1beta1: served %v storage %v deprecated %v, want served, stored, not deprecated", beta.Served, beta.Storage, beta.Deprecated)
			}
			if !alpha.Served || alpha.Storage || !alpha.Deprecated {
				t.Errorf("v1alpha1: served %v storage %v deprecated %v, want served, not stored, deprecated", alpha.Served, alpha.Storage, alpha.Deprecated)
			}
			kind := crd.Spec.Names.Kind
			if w := alpha.DeprecationWarning; w == nil || !strings.Contains(*w, "exagent.io/v1beta1 "+kind) {
				t.Errorf("v1alpha1's deprecation warning %v does not name exagent.io/v1beta1 %s", w, kind)
			}
			if d := cmp.Diff(alpha.Schema, beta.Schema); d != "" {
				t.Errorf("the v1alpha1 and v1beta1 schemas differ (-v1alpha1 +v1beta1):\n%s", d)
			}
			if d := cmp.Diff(alpha.Subresources, beta.Subresources); d != "" {
				t.Errorf("subresources differ:\n%s", d)
			}
			if d := cmp.Diff(alpha.AdditionalPrinterColumns, beta.AdditionalPrinterColumns); d != "" {
				t.Errorf("printer columns differ:\n%s", d)
			}
			if d := cmp.Diff(alpha.SelectableFields, beta.SelectableFields); d != "" {
				t.Errorf("selectable fields differ:\n%s", d)
			}
		})
	}
}
