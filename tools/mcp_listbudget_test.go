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

package tools

import (
	"io"
	"strings"
	"testing"

	"github.com/exagent-io/exagent/internal/bounded"
)

// TestListingBudget: the bodies of one listing share its bounds; bytes
// are counted exactly (at the bound is fine, one past is not), marks only
// outside strings (an escaped quote stays in the string, a line break
// ends any), and the read that crosses a bound returns what fits, closes
// its body and stops the listing; later reads of any body fail the same.
func TestListingBudget(t *testing.T) {
	read := func(b *listingBudget, bodies ...string) (got []string, err error) {
		for _, s := range bodies {
			rc := &closeSpy{Reader: strings.NewReader(s)}
			data, err := io.ReadAll(b.body(rc))
			got = append(got, string(data))
			if err != nil {
				if !rc.closed {
					t.Errorf("the body that crossed the bound was not closed")
				}
				return got, err
			}
		}
		return got, nil
	}
	for name, tc := range map[string]struct {
		maxBytes, maxMarks int64
		bodies             []string
		wantRead           []string
		wantErr            string
	}{
		"at the byte bound":     {maxBytes: 10, maxMarks: 100, bodies: []string{"12345", "67890"}, wantRead: []string{"12345", "67890"}},
		"one byte past it":      {maxBytes: 10, maxMarks: 100, bodies: []string{"12345", "678901"}, wantRead: []string{"12345", "67890"}, wantErr: "is over the 10 bytes bound"},
		"marks across bodies":   {maxBytes: 100, maxMarks: 3, bodies: []string{`{"a":`, `[1,2]}`}, wantRead: []string{`{"a":`, `[1`}, wantErr: "more than 3 JSON values"},
		"marks inside strings":  {maxBytes: 100, maxMarks: 4, bodies: []string{`{"a":"{[:,\",{[:"}`}, wantRead: []string{`{"a":"{[:,\",{[:"}`}},
		"a line break ends one": {maxBytes: 100, maxMarks: 2, bodies: []string{": \"\n", `{"a":[`}, wantRead: []string{": \"\n", `{"a"`}, wantErr: "more than 2 JSON values"},
		"an escaped backslash":  {maxBytes: 100, maxMarks: 2, bodies: []string{`{"a\\":[`}, wantRead: []string{`{"a\\":`}, wantErr: "more than 2 JSON values"},
	} {
		t.Run(name, func(t *testing.T) {
			stopped := false
			b := newListingBudget(tc.maxBytes, tc.maxMarks, func() { stopped = true })
			got, err := read(b, tc.bodies...)
			if strings.Join(got, "|") != strings.Join(tc.wantRead, "|") {
				t.Errorf("read %q, want %q", got, tc.wantRead)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr == "":
				return
			case err == nil || !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if !stopped || b.tripped() == nil {
				t.Errorf("stopped %v, tripped %v: want the listing stopped", stopped, b.tripped())
			}
			if _, err := b.body(io.NopCloser(strings.NewReader("x"))).Read(make([]byte, 8)); err != b.tripped() {
				t.Errorf("a later body read %v, want the budget's error", err)
			}
			if strings.Contains(tc.wantErr, "bytes bound") && !bounded.IsTooLarge(err) {
				t.Errorf("the byte bound's error %T is not a bounded.TooLargeError", err)
			}
		})
	}
}

type closeSpy struct {
	io.Reader
	closed bool
}

func (c *closeSpy) Close() error { c.closed = true; return nil }
