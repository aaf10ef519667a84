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

package v1beta1_test

import (
	"testing"

	"k8s.io/utils/ptr"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestTranscriptBytesDefault: an Agent that sets no transcript limit gets
// 8 MiB (docs/architecture.md §15); an explicit value is its own.
func TestTranscriptBytesDefault(t *testing.T) {
	tests := map[string]struct {
		limits exagentv1.LimitsSpec
		want   int64
	}{
		"unset":    {want: 8 << 20},
		"explicit": {limits: exagentv1.LimitsSpec{MaxTranscriptBytes: ptr.To[int64](64 << 20)}, want: 64 << 20},
		"low":      {limits: exagentv1.LimitsSpec{MaxTranscriptBytes: ptr.To[int64](64 << 10)}, want: 64 << 10},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.limits.TranscriptBytes(); got != tc.want {
				t.Errorf("TranscriptBytes() = %d, want %d", got, tc.want)
			}
		})
	}
	if exagentv1.DefaultMaxTranscriptBytes != 8<<20 {
		t.Errorf("DefaultMaxTranscriptBytes = %d, want 8 MiB", exagentv1.DefaultMaxTranscriptBytes)
	}
}
