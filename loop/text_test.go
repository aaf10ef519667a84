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
