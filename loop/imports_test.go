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

package loop

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pureDirs are the engine and the packages it builds on: each is held to
// the engine's rule, so that nothing the engine imports can do what the
// engine may not.
var pureDirs = []string{".", "../internal/canonical", "../internal/segment"}

// TestPurity keeps the engine pure: no Kubernetes client, no network, no
// files or processes, and no clock — time is always passed in.
func TestPurity(t *testing.T) {
	forbidden := []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "net/http", "os", "os/exec", "net", "math/rand", "crypto/rand"}
	var files []string
	for _, dir := range pureDirs {
		found, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(found) == 0 {
			t.Fatalf("no Go files in %s: the purity check would check nothing", dir)
		}
		files = append(files, found...)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		test := strings.HasSuffix(name, "_test.go")
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if (path == bad || strings.HasPrefix(path, bad+"/")) && (!test || (path != "os" && path != "path/filepath")) {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
		if test {
			continue
		}
		full, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
				t.Errorf("%s: time.%s reads the clock; pass now in", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "metav1" && sel.Sel.Name == "Now" {
				t.Errorf("%s: metav1.Now reads the clock; pass now in", fset.Position(sel.Pos()))
			}
			return true
		})
	}
}
