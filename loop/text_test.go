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
	"strings"
	"testing"
)

func TestTruncate(t *testing.T) {
	cases := map[string]struct {
		in   string
		max  int
		want string
	}{
		"fits":           {in: "abc", max: 3, want: "abc"},
		"rune boundary":  {in: "aé", max: 2, want: "a"},
		"zero":           {in: "abc", max: 0, want: ""},
		"negative":       {in: "abc", max: -1, want: ""},
		"bound marks":    {in: strings.Repeat("x", 40), max: 30, want: strings.Repeat("x", 30-len(truncatedMark)) + truncatedMark},
		"bound tiny cut": {in: strings.Repeat("x", 40), max: 5, want: "xxxxx"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := truncateUTF8(tc.in, tc.max)
			if strings.HasPrefix(name, "bound") {
				got = bound(tc.in, tc.max)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
