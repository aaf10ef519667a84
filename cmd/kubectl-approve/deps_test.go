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

package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPluginDoesNotLinkTheEngine: the plugin reads segments through
// internal/segment and never links the engine (loop) nor what only the
// engine needs (CEL for policy, JSON Schema for tool arguments). The
// dependency list is the build's own, from `go list -deps` on this package
// (test files excluded: tests may build sealed runs with loop); for each
// package that must not be there, the failure names who imports it.
func TestPluginDoesNotLinkTheEngine(t *testing.T) {
	module := strings.TrimSpace(goList(t, "-f", "{{.Module.Path}}", "."))
	forbidden := []string{module + "/loop", "cel.dev/cel-go", "github.com/google/cel-go", "github.com/santhosh-tekuri/jsonschema"}
	// Each line: a package of the build, then the packages it imports.
	importers := map[string][]string{}
	var deps []string
	for line := range strings.Lines(goList(t, "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", ".")) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		deps = append(deps, fields[0])
		for _, imp := range fields[1:] {
			importers[imp] = append(importers[imp], fields[0])
		}
	}
	if app := module + "/cmd/kubectl-approve/app"; !slices.Contains(deps, app) {
		t.Fatalf("the plugin's dependencies lack %s: the list is not the build's (%d packages)", app, len(deps))
	}
	under := func(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }
	for _, bad := range forbidden {
		linked := 0
		var through []string // where the build enters bad from outside it
		for _, pkg := range deps {
			if !under(pkg, bad) {
				continue
			}
			linked++
			for _, by := range importers[pkg] {
				if !under(by, bad) {
					through = append(through, by+" imports "+pkg)
				}
			}
		}
		if linked > 0 {
			t.Errorf("the plugin links %d packages of %s: %s", linked, bad, strings.Join(through, "; "))
		}
	}
}

// goList runs `go list args…` in this package's directory.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("go list %s: %s", strings.Join(args, " "), msg)
	}
	return string(out)
}
