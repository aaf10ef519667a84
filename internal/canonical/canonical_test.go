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

package canonical

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJSON(t *testing.T) {
	cases := map[string]struct {
		in      any
		want    string
		wantErr string
	}{
		"sorted keys, no whitespace": {in: json.RawMessage(`{ "b": 1, "a": [true, false, null] }`), want: `{"a":[true,false,null],"b":1}`},
		"nested objects sorted":      {in: json.RawMessage(`{"z":{"y":1,"x":2},"a":{}}`), want: `{"a":{},"z":{"x":2,"y":1}}`},
		// RFC 8785 §3.2.3: sorting by UTF-16 code units puts U+1F600 (D83D…) before U+FB33.
		"utf16 key order": {in: json.RawMessage(`{"\ufb33":1,"😀":2,"a":3}`), want: "{\"a\":3,\"😀\":2,\"\ufb33\":1}"},
		// RFC 8785 §3.2.2.2: minimal escapes, lowercase \u00xx, no escaping of non-ASCII.
		"string escapes":   {in: json.RawMessage(`"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"`), want: `"€$\u000f\nA'B\"\\\\\"/"`},
		"html not escaped": {in: "<a&b>", want: `"<a&b>"`},
		// RFC 8785 appendix B number serialization.
		"number zero":           {in: json.RawMessage(`[0.0, -0.0, -0]`), want: `[0,0,0]`},
		"number fraction":       {in: json.RawMessage(`[1.0, 1.5, -1.25, 0.000001, 1e-7]`), want: `[1,1.5,-1.25,0.000001,1e-7]`},
		"number large double":   {in: json.RawMessage(`[1e21, 1e+30, 123456789012345680000.0, 9007199254740992.0]`), want: `[1e+21,1e+30,123456789012345680000,9007199254740992]`},
		"number max double":     {in: json.RawMessage(`1.7976931348623157e308`), want: `1.7976931348623157e+308`},
		"number min subnormal":  {in: json.RawMessage(`5e-324`), want: `5e-324`},
		"integer kept exact":    {in: json.RawMessage(`{"id":12345678901234567890}`), want: `{"id":12345678901234567890}`},
		"integer negative zero": {in: json.RawMessage(`-0`), want: `0`},
		"go value":              {in: map[string]any{"b": []int{2, 1}, "a": "x"}, want: `{"a":"x","b":[2,1]}`},
		"bytes":                 {in: []byte(`{"a" : 1}`), want: `{"a":1}`},
		"not json":              {in: json.RawMessage(`{"a":`), wantErr: "decode"},
		"trailing data":         {in: json.RawMessage(`{} {}`), wantErr: "trailing"},
		"out of range":          {in: json.RawMessage(`1e400`), wantErr: "finite"},
		"unmarshalable":         {in: func() {}, wantErr: "marshal"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := JSON(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("canonical form (-want +got):\n%s", diff)
			}
			again, err := JSON(got)
			if err != nil || string(again) != string(got) {
				t.Errorf("canonical form is not a fixed point: %s → %s (%v)", got, again, err)
			}
		})
	}
}

func TestHash(t *testing.T) {
	got := Hash([]byte("abc"))
	want := "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got != want {
		t.Errorf("Hash = %s, want %s", got, want)
	}
	a, _ := HashOf(json.RawMessage(`{"x":1,"y":[1,2]}`))
	b, _ := HashOf(json.RawMessage(`{ "y":[1, 2], "x":1.0 }`))
	if a != b {
		t.Errorf("equal documents hash differently: %s vs %s", a, b)
	}
}
