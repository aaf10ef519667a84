package v1alpha1_test

import (
	"testing"

	"k8s.io/utils/ptr"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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
