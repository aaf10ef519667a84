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
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// link is an inline Markdown link or image: [text](target "title").
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan is inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// TestDocLinksResolve: every relative link of a tracked Markdown file
// names a tracked file or folder, and its #fragment a heading there (as
// GitHub makes anchors); the README links only inside the repository.
func TestDocLinksResolve(t *testing.T) {
	dir := root(t)
	files := map[string]bool{}
	for _, f := range tracked(t) {
		files[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			files[d] = true
		}
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		anchors[file] = headingAnchors(string(b))
		return anchors[file]
	}
	for _, doc := range tracked(t, "*.md") {
		b, err := os.ReadFile(filepath.Join(dir, doc))
		if err != nil {
			t.Fatal(err)
		}
		for n, target := range links(string(b)) {
			where := doc + ":" + n
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				if doc == "README.md" {
					t.Errorf("%s: %s points outside the repository: the README links only to files in it", where, target)
				}
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			if file == "" {
				file = doc
			} else {
				file = path.Clean(path.Join(path.Dir(doc), file))
			}
			if strings.HasPrefix(file, "../") || !files[file] {
				t.Errorf("%s: %s: no tracked file or folder %s", where, target, file)
				continue
			}
			if fragment != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[fragment] {
				t.Errorf("%s: %s: %s has no heading with anchor #%s", where, target, file, fragment)
			}
		}
	}
}

// links returns a document's link targets outside code blocks and code
// spans, keyed by "line:n".
func links(doc string) map[string]string {
	out := map[string]string{}
	fenced := false
	for i, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for j, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			key := strconv.Itoa(i + 1)
			if j > 0 {
				key += "." + strconv.Itoa(j+1)
			}
			out[key] = m[1]
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a document's headings:
// lower case, punctuation dropped, spaces as hyphens, and -1, -2 … on
// repeats.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(l)
		if fenced || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
