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

package repo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// root is the repository root: two folders above this file.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// tracked lists the files git tracks (the index: a file removed with
// `git rm --cached` is no longer one) that exist in the work tree,
// matching the optional pathspecs.
func tracked(t *testing.T, pathspecs ...string) []string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"ls-files", "-z", "--"}, pathspecs...)...)
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v: %s", err, stderr.String())
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root(t), f)); err == nil {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatalf("git ls-files %v lists nothing", pathspecs)
	}
	return files
}
