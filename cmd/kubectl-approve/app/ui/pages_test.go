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

package ui

import (
	"strings"
	"testing"
	"time"
)

// Run content is text: whatever a model or a tool wrote comes out
// escaped in every template that shows it.
func TestRunContentIsEscaped(t *testing.T) {
	p, err := loadPages()
	if err != nil {
		t.Fatal(err)
	}
	payload := `<script>window.pwned=1</script><img src=x onerror="window.pwned=1"><a href="javascript:window.pwned=1">x</a>`
	row := inboxRow{Key: "ns/r/a", Namespace: "ns", Run: "r", Tool: payload, Args: payload, Rule: payload, Deciders: payload,
		Votes: []string{payload}, Quorum: payload, Requested: time.Now()}
	question := row
	question.Question = &questionView{Text: payload, Choices: []string{payload}, Schema: payload}
	for _, r := range []inboxRow{row, question} {
		html, err := p.fragment("inbox", "row", r)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"<script", "<img", "<a href=\"javascript"} {
			if strings.Contains(html, bad) {
				t.Fatalf("the row contains %q unescaped:\n%s", bad, html)
			}
		}
		if !strings.Contains(html, "&lt;script&gt;") {
			t.Fatalf("the payload is not shown as text:\n%s", html)
		}
	}
}

// The transcript's Older link is a query the run page reads back (the
// template must not escape its separators away).
func TestOlderLink(t *testing.T) {
	p, err := loadPages()
	if err != nil {
		t.Fatal(err)
	}
	v := runView{Namespace: "ns", Name: "r", Transcript: transcriptView{Title: "Latest messages", Latest: true}}
	v.Transcript.older("0f3a", 3)
	var b strings.Builder
	if err := p.byName["run"].ExecuteTemplate(&b, "layout", v); err != nil {
		t.Fatal(err)
	}
	if want := `href="/runs/ns/r?segment=0f3a&amp;index=3#transcript"`; !strings.Contains(b.String(), want) {
		t.Fatalf("the page lacks %s", want)
	}
}
