package v1alpha1

import "testing"

// TestLabelValue: short names are kept; long ones are shortened to a
// stable value (children's labels written by earlier versions must still
// match), which ends alphanumeric and keeps distinct names distinct.
func TestLabelValue(t *testing.T) {
	tests := map[string]struct{ name, want string }{
		"fits":                     {name: "run-1", want: "run-1"},
		"exactly 63":               {name: string(make63()), want: string(make63())},
		"long, cut at a separator": {name: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", want: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-d45ee8aa76"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := LabelValue(tc.name)
			if got != tc.want {
				t.Errorf("LabelValue(%q) = %q, want %q", tc.name, got, tc.want)
			}
			if len(got) > maxLabelValue {
				t.Errorf("LabelValue(%q) has %d bytes, more than a label value may", tc.name, len(got))
			}
		})
	}
	if a, b := LabelValue("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"), LabelValue("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"+"c"); a == b {
		t.Errorf("two long names share the label value %q", a)
	}
}

func make63() []byte {
	b := make([]byte, 63)
	for i := range b {
		b[i] = 'x'
	}
	return b
}
