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
	"fmt"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// The logical transcript is status.history preceded by the messages sealed
// into the run's AgentRunSegments (status.transcript, docs/architecture.md §10).
// The engine only ever appends to it; limits.maxTranscriptBytes bounds its
// total (the sealed bytes the head counts plus the tail), checked
// before every IO with room for what the IO can add, so the limit is
// never passed.

// transcriptBytes is the size of the whole logical transcript: what the
// segments hold (transcript.bytes) and the tail in history.
func transcriptBytes(s *Status) int64 {
	var n int64
	if s.Transcript != nil {
		n = s.Transcript.Bytes
	}
	for i := range s.History {
		n += segment.MessageBytes(&s.History[i])
	}
	return n
}

// appendMessage adds m to the transcript.
func appendMessage(st *Status, m exagentv1.Message) {
	st.History = append(st.History, m)
}

// maxTranscript is the run's transcript limit: the Agent's
// limits.maxTranscriptBytes (or its default), lowered to the manager's cap
// when that is lower. The cap clamps rather than refuses: admission does
// not know the manager's flags, and an Agent valid on one cluster stays
// valid on another.
func (e *Env) maxTranscript() int64 {
	n := e.agentTranscript()
	if c := e.in.MaxTranscriptBytes; c > 0 && c < n {
		return c
	}
	return n
}

// agentTranscript is what the Agent asks for: limits.maxTranscriptBytes or its default.
func (e *Env) agentTranscript() int64 {
	l := e.limits()
	return l.TranscriptBytes()
}

// transcriptRoom tells whether the transcript has room for reserve more
// bytes (what the next IO may add at most).
func transcriptRoom(st *Status, env *Env, reserve int64) bool {
	return transcriptBytes(st)+reserve <= env.maxTranscript()
}

// transcriptTooLarge ends the run before an IO whose result could take the
// transcript past its limit. The message names the limit that bit: the
// Agent's, or the manager's cap when it is lower than what the Agent asks.
func transcriptTooLarge(st *Status, env *Env, now time.Time, what string, reserve int64) Action {
	limit, asked := env.maxTranscript(), env.agentTranscript()
	msg := fmt.Sprintf("%s could take the transcript past limits.maxTranscriptBytes (%d): %d bytes used, up to %d more; "+
		"raise the Agent's limit or have the model ask for less", what, limit, transcriptBytes(st), reserve)
	if limit < asked {
		msg = fmt.Sprintf("%s could take the transcript past the manager's --max-transcript-bytes (%d), "+
			"which caps the Agent's limits.maxTranscriptBytes (%d): %d bytes used, up to %d more; "+
			"have the model ask for less, or ask the cluster's operators to raise the cap", what, limit, asked, transcriptBytes(st), reserve)
	}
	endRun(st, env, now, exagentv1.PhaseFailed, exagentv1.ReasonTranscriptTooLarge, msg)
	return failAction(st)
}

// modelResponseReserve is the most one model response adds to the
// transcript: its content and every tool call's arguments, each bounded.
const modelResponseReserve = maxContent

// toolResultReserve is the most one tool result adds.
const toolResultReserve = maxContent
