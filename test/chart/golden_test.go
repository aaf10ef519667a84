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
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "TestChartDefaultRendering: rewrite testdata/default.golden")

// goldenVersion stands in for the chart's version and appVersion in the
// golden rendering, so that moving Chart.yaml to the next release does not
// change it.
const goldenVersion = "0.0.0-golden"

// TestChartDefaultRendering: with the default values, and with shards: []
// (the default, said), the chart renders byte for byte
// testdata/default.golden (`go test ./test/chart -run
// TestChartDefaultRendering -update` rewrites it). TestChartMatchesKustomize
// compares objects field by field; this catches what it cannot — a value
// whose default is meant to change nothing, or a template change, that
// moves a line, a comment or a blank. A change of the default rendering is
// a change of this file, reviewed with the templates.
func TestChartDefaultRendering(t *testing.T) {
	path := filepath.Join("testdata", "default.golden")
	if *update {
		if err := os.WriteFile(path, []byte(renderStream(t, nil)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, values := range map[string]map[string]any{
		"no values":  nil,
		"shards: []": {"shards": []any{}},
	} {
		t.Run(name, func(t *testing.T) {
			got := renderStream(t, values)
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./test/chart -run TestChartDefaultRendering -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("the default rendering changed (-%s +rendered):\n%s", path, diff)
			}
		})
	}
}

// renderStream is the chart rendered for values as one stream, as helm
// template prints it: each template that renders anything, in the order of
// their names, after a "# Source:" line (NOTES.txt and partials left out).
func renderStream(t *testing.T, values map[string]any) string {
	t.Helper()
	c := loadChart(t)
	c.Metadata.Version, c.Metadata.AppVersion = goldenVersion, "v"+goldenVersion
	files, err := renderChartFiles(c, values)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(filepath.Base(name), "_") || strings.TrimSpace(files[name]) == "" {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString("---\n# Source: " + name + "\n" + files[name] + "\n")
	}
	return b.String()
}
