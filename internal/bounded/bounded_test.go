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

package bounded

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type closeRecorder struct {
	io.Reader
	closed int
}

func (c *closeRecorder) Close() error { c.closed++; return nil }

func TestBody(t *testing.T) {
	tests := map[string]struct {
		in       string
		limit    int64
		wantData string
		wantErr  bool
	}{
		"under the bound":    {in: "abc", limit: 10, wantData: "abc"},
		"exactly the bound":  {in: "abcdefghij", limit: 10, wantData: "abcdefghij"},
		"one byte over":      {in: "abcdefghijk", limit: 10, wantData: "abcdefghij", wantErr: true},
		"far over":           {in: strings.Repeat("x", 1<<20), limit: 100, wantData: strings.Repeat("x", 100), wantErr: true},
		"a zero bound reads": {in: "a", limit: 0, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rc := &closeRecorder{Reader: strings.NewReader(tc.in)}
			var tripped int
			b := Body(rc, tc.limit, "test answer", func(*TooLargeError) { tripped++ })
			data, err := io.ReadAll(b)
			if string(data) != tc.wantData {
				t.Errorf("read %d bytes, want %d", len(data), len(tc.wantData))
			}
			if !tc.wantErr {
				if err != nil || tripped != 0 || rc.closed != 0 {
					t.Errorf("err %v, tripped %d, closed %d; want none", err, tripped, rc.closed)
				}
				return
			}
			var tl *TooLargeError
			if !errors.As(err, &tl) || !IsTooLarge(err) || tripped != 1 || rc.closed != 1 {
				t.Fatalf("err %v, tripped %d, closed %d; want a TooLargeError, one trip, the body closed at once", err, tripped, rc.closed)
			}
			if _, again := b.Read(make([]byte, 8)); again != err {
				t.Errorf("a later read returned %v, want the same error", again)
			}
		})
	}
}

func TestReadAllAndSize(t *testing.T) {
	data, err := ReadAll(strings.NewReader(strings.Repeat("y", 70<<10)), 64<<10, "tool answer")
	if len(data) != 64<<10 || err == nil || err.Error() != "tool answer is over the 64 KiB bound: exagent read no more of it" {
		t.Errorf("ReadAll = %d bytes, %v", len(data), err)
	}
	if data, err := ReadAll(strings.NewReader("ok"), 64<<10, "x"); string(data) != "ok" || err != nil {
		t.Errorf("ReadAll = %q, %v", data, err)
	}
	for n, want := range map[int64]string{8 << 20: "8 MiB", 64 << 10: "64 KiB", 1000: "1000 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
