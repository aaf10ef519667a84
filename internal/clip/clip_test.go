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

package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	tests := map[string]struct {
		s    string
		n    int
		mark string
		want string
	}{
		"fits":                          {s: "hello", n: 5, mark: Ellipsis, want: "hello"},
		"cut, mark inside the bound":    {s: "hello world", n: 8, mark: Ellipsis, want: "hello…"},
		"never inside a rune":           {s: "ééééé", n: 6, mark: "", want: "ééé"},
		"rune boundary before mark":     {s: "ééééé", n: 7, mark: Ellipsis, want: "éé…"},
		"mark longer than the bound":    {s: "hello world", n: 4, mark: "…[truncated]", want: "hell"},
		"mark as long as the bound":     {s: "hello world", n: 3, mark: Ellipsis, want: "hel"},
		"zero":                          {s: "hello", n: 0, mark: Ellipsis, want: ""},
		"negative":                      {s: "hello", n: -1, mark: Ellipsis, want: ""},
		"empty":                         {s: "", n: 0, mark: Ellipsis, want: ""},
		"invalid UTF-8 is cut by bytes": {s: "\xff\xfe\xfd\xfc", n: 2, mark: "", want: "\xff\xfe"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Bytes(tc.s, tc.n, tc.mark)
			if got != tc.want {
				t.Errorf("Bytes(%q, %d, %q) = %q, want %q", tc.s, tc.n, tc.mark, got, tc.want)
			}
		})
	}
}

// TestBytesNeverPastTheBound: for every bound, the result has at most that
// many bytes and is valid UTF-8 when the input is.
func TestBytesNeverPastTheBound(t *testing.T) {
	s := strings.Repeat("aé日🙂", 8)
	for _, mark := range []string{"", Ellipsis, "…[truncated]"} {
		for n := -1; n <= len(s)+1; n++ {
			got := Bytes(s, n, mark)
			if len(got) > max(n, 0) {
				t.Fatalf("Bytes(s, %d, %q) has %d bytes", n, mark, len(got))
			}
			if !utf8.ValidString(got) {
				t.Fatalf("Bytes(s, %d, %q) = %q is not UTF-8", n, mark, got)
			}
		}
	}
}
