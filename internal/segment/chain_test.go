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
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const runUID = "run-uid"

// makeChain builds n chained segments of run runUID, each with two
// messages, a call and a receipt, and the head that closes them.
func makeChain(t *testing.T, n int) ([]Segment, exagentv1.TranscriptHead) {
	return makeChainWith(t, n, func(int, *exagentv1.AgentRunSegmentSpec) {})
}

// makeChainWith is makeChain with mut applied to each spec before it is
// named: a segment that is what its name says, linked as the chain links,
// but wrong in some other way.
func makeChainWith(t *testing.T, n int, mut func(i int, spec *exagentv1.AgentRunSegmentSpec)) ([]Segment, exagentv1.TranscriptHead) {
	t.Helper()
	var head exagentv1.TranscriptHead
	var chain []Segment
	for i := range n {
		spec := exagentv1.AgentRunSegmentSpec{
			RunName: "run", RunUID: runUID, Index: int32(i), Previous: head.Head, FirstMessage: head.Messages,
			Messages: []exagentv1.Message{
				{Role: exagentv1.RoleUser, Content: fmt.Sprintf("question %d", i)},
				{Role: exagentv1.RoleAssistant, Content: fmt.Sprintf("answer %d", i)},
			},
			Calls:    []exagentv1.ToolCall{{ID: fmt.Sprintf("c%d", i), Tool: "read", Args: `{}`}},
			Receipts: []exagentv1.Receipt{{OperationID: fmt.Sprintf("op%d", i)}},
		}
		mut(i, &spec)
		chain = append(chain, named(t, spec))
		head.Head = chain[i].Name
		head.Segments++
		head.Messages += 2
		head.Calls++
		head.Receipts++
		head.Bytes += int64(len(fmt.Sprintf("question %danswer %d", i, i)))
	}
	return chain, head
}

// named is spec under its content-hash name.
func named(t *testing.T, spec exagentv1.AgentRunSegmentSpec) Segment {
	t.Helper()
	name, size, err := Name(&spec)
	if err != nil {
		t.Fatal(err)
	}
	return Segment{Name: name, Spec: spec, Size: size}
}

// store is a Fetch over segments by name that records what was asked.
type store struct {
	byName map[string]Segment
	asked  []string
}

func newStore(segs []Segment) *store {
	s := &store{byName: map[string]Segment{}}
	for _, seg := range segs {
		s.byName[seg.Name] = seg
	}
	return s
}

func (s *store) fetch(name string, index int32) (Segment, error) {
	s.asked = append(s.asked, fmt.Sprintf("%d:%s", index, name))
	seg, ok := s.byName[name]
	if !ok {
		return Segment{}, Corruptf("segment %s (index %d) is missing", name, index)
	}
	return seg, Check(seg)
}

// TestWalk: the walk follows previous from the head, asks for each
// segment once at the index the chain expects, returns the chain index 0
// first, and refuses — as a CorruptError naming what is wrong — any chain
// that does not hold, including a head that lies about its length.
func TestWalk(t *testing.T) {
	chain, head := makeChain(t, 3)
	// resealed is the chain built with mut applied to segment at, and its head.
	resealed := func(at int, mut func(*exagentv1.AgentRunSegmentSpec)) ([]Segment, exagentv1.TranscriptHead) {
		return makeChainWith(t, 3, func(i int, spec *exagentv1.AgentRunSegmentSpec) {
			if i == at {
				mut(spec)
			}
		})
	}
	other, otherHead := resealed(2, func(s *exagentv1.AgentRunSegmentSpec) { s.RunUID = "other" })
	linked, linkedHead := resealed(0, func(s *exagentv1.AgentRunSegmentSpec) { s.Previous = "x" })
	moved, movedHead := resealed(0, func(s *exagentv1.AgentRunSegmentSpec) { s.FirstMessage = 1 })
	withHead := func(mut func(*exagentv1.TranscriptHead)) exagentv1.TranscriptHead {
		h := head
		mut(&h)
		return h
	}
	// A turn of a conversation: its first two segments are an earlier
	// turn's, taken by reference (the base), the third its own.
	earlier, earlierHead := makeChainWith(t, 3, func(i int, spec *exagentv1.AgentRunSegmentSpec) {
		if i < 2 {
			spec.RunUID = "earlier"
		}
	})
	based := func(n int32, baseHead string) exagentv1.TranscriptHead {
		h := earlierHead
		h.BaseSegments, h.BaseHead = n, baseHead
		return h
	}
	cases := map[string]struct {
		head      exagentv1.TranscriptHead
		segs      []Segment
		want      string // in the CorruptError; empty: the chain holds
		wantAsked int
	}{
		"holds":                      {head: head, segs: chain, wantAsked: 3},
		"nothing sealed":             {head: exagentv1.TranscriptHead{}, segs: nil},
		"negative length":            {head: withHead(func(h *exagentv1.TranscriptHead) { h.Segments = -1 }), segs: chain, want: "counts -1 segments"},
		"head names none":            {head: withHead(func(h *exagentv1.TranscriptHead) { h.Head = "" }), segs: chain, want: "names none"},
		"missing segment":            {head: head, segs: chain[1:], want: "segment " + chain[0].Name + " (index 0) is missing", wantAsked: 3},
		"longer head":                {head: withHead(func(h *exagentv1.TranscriptHead) { h.Segments = 1 << 30 }), segs: chain, want: "out of order", wantAsked: 1},
		"shorter head":               {head: withHead(func(h *exagentv1.TranscriptHead) { h.Segments = 2 }), segs: chain, want: "out of order", wantAsked: 1},
		"edited":                     {head: head, segs: func() []Segment { s := append([]Segment(nil), chain...); s[1].Spec.Messages = nil; return s }(), want: "was edited", wantAsked: 2},
		"another run":                {head: otherHead, segs: other, want: "belongs to run UID other", wantAsked: 1},
		"previous at 0":              {head: linkedHead, segs: linked, want: `at index 0 has previous "x"`, wantAsked: 3},
		"first message":              {head: movedHead, segs: moved, want: "starts at message 1, expected 0", wantAsked: 3},
		"counts":                     {head: withHead(func(h *exagentv1.TranscriptHead) { h.Calls = 7 }), segs: chain, want: "the head counts 6 messages, 7 calls", wantAsked: 3},
		"bytes":                      {head: withHead(func(h *exagentv1.TranscriptHead) { h.Bytes++ }), segs: chain, want: "bytes; the chain holds", wantAsked: 3},
		"head moved":                 {head: withHead(func(h *exagentv1.TranscriptHead) { h.Head = chain[0].Name }), segs: chain, want: "out of order", wantAsked: 1},
		"nothing but head":           {head: withHead(func(h *exagentv1.TranscriptHead) { h.Segments = 0 }), segs: chain, want: "the head counts 6 messages"},
		"an earlier turn's base":     {head: based(2, earlier[1].Name), segs: earlier, wantAsked: 3},
		"another run without a base": {head: earlierHead, segs: earlier, want: "belongs to run UID earlier", wantAsked: 2},
		"another run above the base": {head: based(1, earlier[0].Name), segs: earlier, want: "belongs to run UID earlier", wantAsked: 2},
		"a base head that is not it": {head: based(2, earlier[0].Name), segs: earlier, want: "is not the earlier turn's head", wantAsked: 2},
		"a base past the chain":      {head: based(4, earlier[2].Name), segs: earlier, want: "takes 4 segments of an earlier turn"},
		"a base with no head named":  {head: based(2, ""), segs: earlier, want: "takes 2 segments of an earlier turn"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := newStore(tc.segs)
			got, err := Walk(tc.head, runUID, st.fetch)
			if len(st.asked) != tc.wantAsked {
				t.Errorf("fetched %d segments, want %d: %v", len(st.asked), tc.wantAsked, st.asked)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.segs, got); diff != "" {
					t.Errorf("chain (-want +got):\n%s", diff)
				}
				return
			}
			c, ok := AsCorrupt(err)
			if !ok || !strings.Contains(c.Message, tc.want) || !strings.HasSuffix(c.Message, hint) {
				t.Fatalf("got %v, want a CorruptError containing %q, with what to do", err, tc.want)
			}
		})
	}
	st := newStore(chain)
	if _, err := Walk(head, runUID, st.fetch); err != nil {
		t.Fatal(err)
	}
	want := []string{"2:" + chain[2].Name, "1:" + chain[1].Name, "0:" + chain[0].Name}
	if diff := cmp.Diff(want, st.asked); diff != "" {
		t.Errorf("the walk's reads (-want +got):\n%s", diff)
	}
}

// TestWalkPassesStoreErrors: an error of the store (not a finding about
// the chain) comes back as it is, so the caller retries it rather than
// end the run.
func TestWalkPassesStoreErrors(t *testing.T) {
	chain, head := makeChain(t, 2)
	down := errors.New("apiserver unreachable")
	_, err := Walk(head, runUID, func(name string, index int32) (Segment, error) {
		if index == 0 {
			return Segment{}, down
		}
		return chain[index], nil
	})
	if !errors.Is(err, down) {
		t.Fatalf("got %v, want the store's error", err)
	}
	if _, corrupt := AsCorrupt(err); corrupt {
		t.Fatalf("a store error reads as a corrupt chain: %v", err)
	}
}

// TestVerify: a chain in hand is checked for content as well as links.
func TestVerify(t *testing.T) {
	chain, head := makeChain(t, 3)
	if err := Verify(head, runUID, chain); err != nil {
		t.Fatal(err)
	}
	edited := append([]Segment(nil), chain...)
	edited[1] = Segment{Name: edited[1].Name, Spec: *edited[1].Spec.DeepCopy()}
	edited[1].Spec.Messages[0].Content = "forged"
	swapped := append([]Segment(nil), chain...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	cases := map[string]struct {
		segs []Segment
		want string
	}{
		"missing":      {segs: chain[1:], want: "the head counts 3 segments, the chain has 2"},
		"edited":       {segs: edited, want: "segment " + chain[1].Name + " was edited: its content hashes to "},
		"out of order": {segs: swapped, want: "expected " + chain[1].Name + " at index 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Verify(head, runUID, tc.segs)
			if c, ok := AsCorrupt(err); !ok || !strings.Contains(c.Message, tc.want) {
				t.Fatalf("got %v, want a CorruptError containing %q", err, tc.want)
			}
		})
	}
}
