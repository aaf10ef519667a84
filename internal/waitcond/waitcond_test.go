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

package waitcond

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMet: each kind of condition on objects that meet it, do not yet,
// and cannot be evaluated.
func TestMet(t *testing.T) {
	deployment := func(status string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "generation": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{
				map[string]any{"type": "Available", "status": status}}},
		}}
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "flag"}, "data": map[string]any{"ready": "yes"}}}
	cases := map[string]struct {
		cond string
		obj  *unstructured.Unstructured
		met  bool
		err  string
	}{
		"Type=Status met":          {cond: "Available=True", obj: deployment("True"), met: true},
		"Type=Status not yet":      {cond: "Available=True", obj: deployment("False")},
		"Type=Status absent":       {cond: "Progressing=True", obj: deployment("True")},
		"Current":                  {cond: "Current", obj: cm, met: true},
		"CEL met":                  {cond: `self.data.ready == "yes"`, obj: cm, met: true},
		"CEL no such key: not yet": {cond: `self.status.ready`, obj: cm},
		"CEL not a bool":           {cond: `self.data`, obj: cm, err: "not a bool"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Parse(tc.cond)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.cond, err)
			}
			met, err := c.Met(context.Background(), tc.obj)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Met = %v, %v; want an error with %q", met, err, tc.err)
				}
				return
			}
			if err != nil || met != tc.met {
				t.Fatalf("Met = %v, %v; want %v", met, err, tc.met)
			}
		})
	}
}

// TestParseRefuses: what is not a condition is told as such.
func TestParseRefuses(t *testing.T) {
	for _, src := range []string{"", "Available=Yes", "self.(", `"text"`, strings.Repeat("x", MaxLength+1)} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%.20q) accepted it", src)
		}
	}
}
