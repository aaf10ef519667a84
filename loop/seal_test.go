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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// sealingHarness runs the engine like a controller with segments: after
// every transition the status is sealed, the segments "created" (kept in
// a map by name), and the sealed status is what the next transition reads.
type sealingHarness struct {
	*harness
	cfg   SealConfig
	store map[string]segment.Segment
	chain []segment.Segment
	// writes are the encoded sizes of every sealed status.
	writes []int
	// segmentBytes written.
	segmentBytes int
}

func newSealingHarness(t *testing.T, env *Env) *sealingHarness {
	h := &sealingHarness{harness: newHarness(t, env), cfg: SealConfig{RunName: "run", RunUID: runUID},
		store: map[string]segment.Segment{}}
	h.seal()
	return h
}

func (h *sealingHarness) seal() {
	h.t.Helper()
	st, segs, err := Seal(h.s, h.cfg)
	if err != nil {
		h.t.Fatalf("Seal: %v", err)
	}
	for _, s := range segs {
		if _, ok := h.store[s.Name]; ok {
			h.t.Fatalf("segment %s sealed twice", s.Name)
		}
		h.store[s.Name] = s
		h.chain = append(h.chain, s)
		_, n, _ := segment.Name(&s.Spec)
		h.segmentBytes += n
	}
	h.s = st
	h.writes = append(h.writes, encodedLen(&st))
}

// TestSealLongRun drives 250 turns whose tool returns 40 KiB each (≈10 MiB,
// past the 8 MiB default: the Agent asks for 16 MiB): every sealed status
// stays within the hot budget, the chain verifies, and the transcript read
// back through it holds every message and result.
func TestSealLongRun(t *testing.T) {
	agent := MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).MaxSteps(1000).Spec()
	agent.Limits.MaxTranscriptBytes = new(int64(16 << 20))
	env := mustEnv(t, agent, MakeRun().Spec())
	h := newSealingHarness(t, env)
	h.claim(w1)
	h.seal()
	const turns = 250
	page := func(i int) string { return fmt.Sprintf("page %d ", i) + strings.Repeat(string(rune('a'+i%26)), 40<<10) }
	var last []exagentv1.Message
	for i := range turns + 1 {
		act := h.step()
		h.seal()
		if act.Kind != ActCallModel {
			t.Fatalf("turn %d: %s, want CallModel", i, act.Kind)
		}
		if i%50 == 0 || i == turns {
			got, err := segment.Transcript(h.chain, act.Model.Messages)
			if err != nil {
				t.Fatalf("turn %d: transcript: %v", i, err)
			}
			last = got
		}
		if i == turns {
			break
		}
		h.respond(tools(call(fmt.Sprintf("c%d", i), "read", fmt.Sprintf(`{"page":%d}`, i))))
		h.seal()
		if act := h.step(); act.Kind != ActRunTools {
			t.Fatalf("turn %d: %s, want RunTools", i, act.Kind)
		}
		h.seal()
		h.outcome(fmt.Sprintf("c%d", i), ResultSucceeded, page(i))
		h.seal()
	}
	if err := segment.Verify(*h.s.Transcript, runUID, h.chain); err != nil {
		t.Fatalf("chain: %v", err)
	}
	// The last request carried the whole transcript, in order.
	if len(last) != 2+2*turns {
		t.Fatalf("last request: %d messages, want %d", len(last), 2+2*turns)
	}
	var total int64
	for i := range turns {
		a, r := last[2+2*i], last[3+2*i]
		if a.Role != exagentv1.RoleAssistant || a.ToolCalls[0].Arguments != fmt.Sprintf(`{"page":%d}`, i) ||
			r.Role != exagentv1.RoleTool || r.ToolCallID != fmt.Sprintf("c%d", i) || r.Content != page(i) {
			t.Fatalf("turn %d read back wrong: %s %v / %s %.20q", i, a.Role, a.ToolCalls, r.Role, r.Content)
		}
	}
	for i := range last {
		total += segment.MessageBytes(&last[i])
	}
	for i, n := range h.writes {
		if n > DefaultHotBytes {
			t.Fatalf("write %d: status of %d bytes, over the hot budget %d", i, n, DefaultHotBytes)
		}
	}
	if got := transcriptBytes(&h.s); got != total {
		t.Errorf("head counts %d transcript bytes, the transcript has %d", got, total)
	}
	// Each value is written once: the segments hold about the transcript's bytes.
	if ratio := float64(h.segmentBytes) / float64(total); ratio > 1.1 {
		t.Errorf("segment bytes %d for %d transcript bytes: ratio %.2f > 1.1", h.segmentBytes, total, ratio)
	}
	calls, err := segment.SealedCalls(h.chain, h.s.Calls)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != turns || calls[turns-1].Outcome.Result != page(turns-1) {
		t.Fatalf("journal read back: %d calls", len(calls))
	}
}

// TestSealIsDeterministic: a retried commit after a crash seals the same
// segments under the same names.
func TestSealIsDeterministic(t *testing.T) {
	env := defaultEnv(t)
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("s1", "search", `{"q":"`+strings.Repeat("x", 9000)+`"}`)))
	a, segsA, err := Seal(h.s, SealConfig{RunName: "run", RunUID: runUID})
	if err != nil {
		t.Fatal(err)
	}
	b, segsB, _ := Seal(h.s, SealConfig{RunName: "run", RunUID: runUID})
	if diff := cmp.Diff(segsA, segsB); diff != "" || len(segsA) != 1 {
		t.Fatalf("segments differ or not one: %d\n%s", len(segsA), diff)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatal(diff)
	}
	// The args of the call and of the message are one value, stored once.
	if len(segsA[0].Spec.Values) != 1 || a.Calls[0].ArgsRef == nil || a.History[2].ToolCalls[0].ArgumentsRef == nil ||
		a.Calls[0].Args != "" || *a.Calls[0].ArgsRef != *a.History[2].ToolCalls[0].ArgumentsRef {
		t.Fatalf("args not sealed once: %+v", a.Calls[0])
	}
	// Sealing the sealed status again is a no-op; so is a hydrated copy.
	again, segs, _ := Seal(a, SealConfig{RunName: "run", RunUID: runUID})
	if len(segs) != 0 || !cmp.Equal(a, again) {
		t.Fatalf("resealing wrote %d segments", len(segs))
	}
	hydrated := clone(a)
	hydrated.Calls[0].Args = h.s.Calls[0].Args
	again, segs, _ = Seal(hydrated, SealConfig{RunName: "run", RunUID: runUID})
	if len(segs) != 0 || !cmp.Equal(a, again) {
		t.Fatalf("a hydrated copy wrote %d segments", len(segs))
	}
}

// TestVerifyChain: a chain of sealed segments that does not hold is, to the
// engine, TranscriptCorrupt (segment.Verify's error, as AsError maps it).
func TestVerifyChain(t *testing.T) {
	env := mustEnv(t, MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
	h := newSealingHarness(t, env)
	h.claim(w1)
	for i := range 6 {
		h.step()
		h.seal()
		h.respond(tools(call(fmt.Sprintf("c%d", i), "read", `{}`)))
		h.seal()
		h.step()
		h.seal()
		h.outcome(fmt.Sprintf("c%d", i), ResultSucceeded, fmt.Sprint(i)+strings.Repeat("r", 20000))
		h.seal()
	}
	if len(h.chain) < 3 {
		t.Fatalf("only %d segments", len(h.chain))
	}
	head := *h.s.Transcript
	if err := segment.Verify(head, runUID, h.chain); err != nil {
		t.Fatal(err)
	}
	edited := append([]segment.Segment(nil), h.chain...)
	edited[1] = segment.Segment{Name: edited[1].Name, Spec: *edited[1].Spec.DeepCopy()}
	if len(edited[1].Spec.Values) > 0 {
		edited[1].Spec.Values[0].Data = "forged"
	} else {
		edited[1].Spec.Messages[0].Content = "forged"
	}
	swapped := append([]segment.Segment(nil), h.chain...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	other := append([]segment.Segment(nil), h.chain...)
	other[0] = segment.Segment{Name: other[0].Name, Spec: *other[0].Spec.DeepCopy()}
	other[0].Spec.RunUID = "another"
	cases := map[string]struct {
		head  exagentv1.TranscriptHead
		chain []segment.Segment
		want  string
	}{
		"missing":      {head: head, chain: h.chain[1:], want: "counts"},
		"edited":       {head: head, chain: edited, want: "was edited"},
		"out of order": {head: head, chain: swapped, want: "index"},
		"another run":  {head: head, chain: other, want: "edited"},
		"head moved": {head: func() exagentv1.TranscriptHead { x := head; x.Head = h.chain[0].Name; return x }(),
			chain: h.chain, want: "expected"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := segment.Verify(tc.head, runUID, tc.chain)
			e, ok := AsError(err)
			if !ok || e.Reason != exagentv1.ReasonTranscriptCorrupt || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("got %v, want TranscriptCorrupt mentioning %q", err, tc.want)
			}
		})
	}
}

// TestOldShapeCompacts: a status written before segments (the whole
// transcript in history, no head) is compacted by its next seal and keeps
// its transcript.
func TestOldShapeCompacts(t *testing.T) {
	env := mustEnv(t, MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	for i := range 12 {
		h.step()
		h.respond(tools(call(fmt.Sprintf("c%d", i), "read", `{}`)))
		h.step()
		h.outcome(fmt.Sprintf("c%d", i), ResultSucceeded, strings.Repeat("o", 3000))
	}
	old := h.s
	if old.Transcript != nil || encodedLen(&old) < 40<<10 {
		t.Fatalf("old shape: transcript %v, %d bytes", old.Transcript, encodedLen(&old))
	}
	act := h.step()
	old = h.s
	sealed, segs, err := Seal(h.s, SealConfig{RunName: "run", RunUID: runUID})
	if err != nil {
		t.Fatal(err)
	}
	if encodedLen(&sealed) > DefaultHotBytes || len(segs) == 0 {
		t.Fatalf("compacted to %d bytes with %d segments", encodedLen(&sealed), len(segs))
	}
	got, err := segment.Transcript(segs, sealed.History)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(act.Model.Messages, got); diff != "" {
		t.Fatalf("transcript changed (-old +compacted):\n%.1500s", diff)
	}
	if transcriptBytes(&sealed) != transcriptBytes(&old) {
		t.Fatalf("bytes %d, was %d", transcriptBytes(&sealed), transcriptBytes(&old))
	}
}

// TestTranscriptLimit: the run ends TranscriptTooLarge before the IO that
// could pass the limit, never after.
func TestTranscriptLimit(t *testing.T) {
	limit := int64(300 << 10)
	agent := MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).Spec()
	agent.Limits.MaxTranscriptBytes = &limit
	env := mustEnv(t, agent, MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	ios := 0
	for i := 0; ; i++ {
		act := h.step()
		if act.Kind == ActFail {
			if h.s.Reason != exagentv1.ReasonTranscriptTooLarge || !strings.Contains(h.s.Message, "maxTranscriptBytes") {
				t.Fatalf("ended %s: %s", h.s.Reason, h.s.Message)
			}
			break
		}
		ios++
		switch act.Kind {
		case ActCallModel:
			h.respond(tools(call(fmt.Sprintf("c%d", i), "read", `{}`)))
		case ActRunTools:
			h.outcome(act.Calls[0].CallID, ResultSucceeded, strings.Repeat("z", maxContent))
		default:
			t.Fatalf("unexpected %s", act.Kind)
		}
		if transcriptBytes(&h.s) > limit {
			t.Fatalf("transcript %d bytes past the limit %d", transcriptBytes(&h.s), limit)
		}
	}
	if ios < 4 {
		t.Fatalf("only %d IOs before the limit", ios)
	}
}

// TestTranscriptCap: the manager's cap (EnvInput.MaxTranscriptBytes)
// lowers what an Agent asks for, never raises it, and the run's message
// names the cap when the cap is what ends the run.
func TestTranscriptCap(t *testing.T) {
	tests := map[string]struct {
		agent       *int64
		cap         int64
		want        int64
		wantMessage string
	}{
		"unset, no cap: the default":       {want: exagentv1.DefaultMaxTranscriptBytes, wantMessage: "past limits.maxTranscriptBytes (8388608)"},
		"unset, cap above the default":     {cap: 32 << 20, want: exagentv1.DefaultMaxTranscriptBytes, wantMessage: "past limits.maxTranscriptBytes"},
		"unset, cap below the default":     {cap: 1 << 20, want: 1 << 20, wantMessage: "the manager's --max-transcript-bytes (1048576), which caps the Agent's limits.maxTranscriptBytes (8388608)"},
		"asks 64 MiB, cap 16 MiB: clamped": {agent: new(int64(64 << 20)), cap: 16 << 20, want: 16 << 20, wantMessage: "--max-transcript-bytes (16777216)"},
		"asks 256 KiB, cap 16 MiB":         {agent: new(int64(256 << 10)), cap: 16 << 20, want: 256 << 10, wantMessage: "past limits.maxTranscriptBytes (262144)"},
		"asks 64 MiB, no cap":              {agent: new(int64(64 << 20)), want: 64 << 20, wantMessage: "past limits.maxTranscriptBytes (67108864)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			agent := MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).Spec()
			agent.Limits.MaxTranscriptBytes = tc.agent
			env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", Agent: agent, AgentGeneration: 1, Run: MakeRun().Spec(),
				MaxTranscriptBytes: tc.cap})
			if err != nil {
				t.Fatal(err)
			}
			if got := env.maxTranscript(); got != tc.want {
				t.Fatalf("limit %d, want %d", got, tc.want)
			}
			// A transcript one model answer short of the limit: the next
			// request could pass it, so the run ends before it.
			h := newHarness(t, env).claim(w1)
			h.s.Transcript = &exagentv1.TranscriptHead{Bytes: tc.want - modelResponseReserve + 1}
			if act := h.step(); act.Kind != ActFail || h.s.Reason != exagentv1.ReasonTranscriptTooLarge {
				t.Fatalf("step %s, reason %s: want the run ended TranscriptTooLarge", act.Kind, h.s.Reason)
			}
			if !strings.Contains(h.s.Message, tc.wantMessage) {
				t.Errorf("message %q, want it to contain %q", h.s.Message, tc.wantMessage)
			}
		})
	}
}
