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

package segment

import (
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// Segment is one AgentRunSegment's content under its name: the sha256
// (hex) of the spec's canonical JSON.
type Segment struct {
	Name string
	Spec exagentv1.AgentRunSegmentSpec
	// Size is the length of the spec's canonical JSON (0 when unknown).
	Size int
}

// Name is the name of a segment with this spec: the sha256 (hex) of its
// canonical JSON, and that JSON's length.
func Name(spec *exagentv1.AgentRunSegmentSpec) (string, int, error) {
	b, err := canonical.JSON(spec)
	if err != nil {
		return "", 0, fmt.Errorf("segment content: %w", err)
	}
	return canonical.SHA256Hex(string(b)), len(b), nil
}

// Check proves seg's content: it hashes to seg's name. A segment read from
// a store is checked once, when it is read; Walk trusts what its Fetch
// returns, so a cache of checked segments is not hashed again.
func Check(seg Segment) error {
	got, _, err := Name(&seg.Spec)
	if err != nil {
		return Corruptf("segment %s: %v", seg.Name, err)
	}
	if got != seg.Name {
		return Corruptf("segment %s was edited: its content hashes to %s", seg.Name, got)
	}
	return nil
}

// MessageBytes is what one message adds to the transcript (what
// status.transcript.bytes counts and limits.maxTranscriptBytes bounds):
// its content and its tool calls' arguments, sealed or inline.
func MessageBytes(m *exagentv1.Message) int64 {
	n := int64(len(m.Content))
	if m.ContentRef != nil {
		n = m.ContentRef.Bytes
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		if tc.ArgumentsRef != nil {
			n += tc.ArgumentsRef.Bytes
		} else {
			n += int64(len(tc.Arguments))
		}
	}
	return n
}
