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

package v1beta1

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
