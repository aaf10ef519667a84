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
	"path/filepath"
	"regexp"
	"testing"
)

// TestGoFilesCarryTheLicenseHeader: every tracked Go file starts with
// hack/boilerplate.go.txt (the header controller-gen also writes), any
// year, after a //go:build line (and a // +build line) if it has one; and the LICENSE beside it
// is the Apache License 2.0 that header names.
func TestGoFilesCarryTheLicenseHeader(t *testing.T) {
	dir := root(t)
	boilerplate, err := os.ReadFile(filepath.Join(dir, "hack", "boilerplate.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	header := headerPattern(t, boilerplate)
	for _, f := range tracked(t, "*.go") {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(b, []byte("//go:build ")) {
			_, b, _ = bytes.Cut(b, []byte("\n"))
			if bytes.HasPrefix(b, []byte("// +build ")) { // conversion-gen's old form beside it
				_, b, _ = bytes.Cut(b, []byte("\n"))
			}
			b = bytes.TrimLeft(b, "\n")
		}
		if !header.Match(b) {
			t.Errorf("%s does not start with the license header of hack/boilerplate.go.txt (followed by a blank line): run `make license`", f)
		}
	}

	license, err := os.ReadFile(filepath.Join(dir, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "END OF TERMS AND CONDITIONS"} {
		if !bytes.Contains(license, []byte(want)) {
			t.Errorf("LICENSE lacks %q: it must be the Apache License 2.0 that the headers name", want)
		}
	}
	if !bytes.Contains(boilerplate, []byte(`Licensed under the Apache License, Version 2.0`)) {
		t.Error("hack/boilerplate.go.txt does not name the Apache License 2.0 of LICENSE")
	}
}

// headerPattern matches the boilerplate at the start of a file, with any
// four-digit year, then a blank line.
func headerPattern(t *testing.T, boilerplate []byte) *regexp.Regexp {
	t.Helper()
	years := regexp.MustCompile(`\b20\d\d\b`)
	quoted := regexp.QuoteMeta(string(bytes.TrimRight(boilerplate, "\n")))
	if !years.MatchString(quoted) {
		t.Fatal("hack/boilerplate.go.txt has no copyright year")
	}
	return regexp.MustCompile(`\A` + years.ReplaceAllString(quoted, `\d{4}`) + `\n\n`)
}
