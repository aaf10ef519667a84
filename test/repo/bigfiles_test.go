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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// MaxTrackedBytes is the largest file the repository may track: every
// clone and every image build context carries each one. Anything larger is
// a build output (a 74 MB plugin binary was committed once) or data that
// belongs elsewhere.
const MaxTrackedBytes = 1 << 20

// bigFileExempt are files allowed past the bound: generated CRDs, which
// controller-gen writes from the types and which must be committed.
func bigFileExempt(path string) bool {
	return strings.HasPrefix(path, "config/crd/bases/") || strings.HasPrefix(path, "charts/exagent/crds/")
}

// TestTrackedFilesAreSmall: no tracked file is over 1 MiB.
func TestTrackedFilesAreSmall(t *testing.T) {
	for _, f := range tracked(t) {
		fi, err := os.Stat(filepath.Join(root(t), f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > MaxTrackedBytes && !bigFileExempt(f) {
			t.Errorf("%s is %d bytes, over the %d a tracked file may have: a build output? "+
				"remove it with `git rm --cached %s` and ignore it in .gitignore", f, fi.Size(), MaxTrackedBytes, f)
		}
	}
}
