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
	"slices"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Fetch returns the segment stored under name, which the chain expects at
// index, with its content proven (Check) — a cache of proven segments
// returns its copy as it is. A segment the store does not have is the
// caller's to word (Corruptf for the engine, a message of its own for a
// person); any other error (the store unreachable) is returned by Walk as
// it is.
type Fetch func(name string, index int32) (Segment, error)

// Walk reads and verifies the chain head closes, from the head back to
// index 0, through fetch, and returns it index 0 first. Every segment must
// be the one asked for, belong to the run of runUID and sit at its index,
// the first one with no previous; the head's counts must be what the chain
// holds, and each segment's messages must start where the ones before it
// end. Following spec.previous from the head is what links each segment to
// the one before it: a segment reached any other way is not in the chain.
//
// This is the only chain walk: the manager before any IO, the plugin
// before it shows a transcript and Verify all come through here. It walks
// at most head.segments links and allocates only for segments fetched, so
// a head that lies about its length costs no more than the segments that
// exist.
func Walk(head exagentv1.TranscriptHead, runUID string, fetch Fetch) ([]Segment, error) {
	if head.Segments < 0 {
		return nil, Corruptf("the head counts %d segments", head.Segments)
	}
	if head.Segments > 0 && head.Head == "" {
		return nil, Corruptf("the head counts %d segments but names none", head.Segments)
	}
	if head.BaseSegments < 0 || head.BaseSegments > head.Segments || (head.BaseSegments > 0) != (head.BaseHead != "") {
		return nil, Corruptf("the head takes %d segments of an earlier turn (base %q) of its %d", head.BaseSegments, head.BaseHead, head.Segments)
	}
	var chain []Segment // head first; reversed below
	var msgs, calls, receipts, bytes int64
	name := head.Head
	for i := head.Segments - 1; i >= 0; i-- {
		seg, err := fetch(name, i)
		if err != nil {
			return nil, err
		}
		// The segments of earlier turns (a conversation's) are another
		// run's: what binds them to this one is the base head this run
		// journaled — its name is the hash of its content, which names the
		// segment before it, and so on down the chain.
		owner := runUID
		if i < head.BaseSegments {
			if i == head.BaseSegments-1 && name != head.BaseHead {
				return nil, Corruptf("segment %s at index %d is not the earlier turn's head %s", name, i, head.BaseHead)
			}
			owner = seg.Spec.RunUID
		}
		if err := link(seg, name, i, owner); err != nil {
			return nil, err
		}
		msgs += int64(len(seg.Spec.Messages))
		calls += int64(len(seg.Spec.Calls))
		receipts += int64(len(seg.Spec.Receipts))
		for k := range seg.Spec.Messages {
			bytes += MessageBytes(&seg.Spec.Messages[k])
		}
		chain = append(chain, seg)
		name = seg.Spec.Previous // not empty past index 0: link checked it
	}
	slices.Reverse(chain)
	if msgs != head.Messages || calls != head.Calls || receipts != head.Receipts || bytes != head.Bytes {
		return nil, Corruptf("the head counts %d messages, %d calls, %d receipts and %d bytes; the chain holds %d, %d, %d and %d",
			head.Messages, head.Calls, head.Receipts, head.Bytes, msgs, calls, receipts, bytes)
	}
	var first int64
	for i := range chain {
		s := &chain[i]
		if len(s.Spec.Messages) > 0 && s.Spec.FirstMessage != first {
			return nil, Corruptf("segment %s starts at message %d, expected %d", s.Name, s.Spec.FirstMessage, first)
		}
		first += int64(len(s.Spec.Messages))
	}
	return chain, nil
}

// link checks that seg, fetched as name, is that segment of the run and
// sits at index of its chain.
func link(seg Segment, name string, index int32, runUID string) error {
	if seg.Name != name {
		return Corruptf("segment %s: expected %s at index %d", seg.Name, name, index)
	}
	if seg.Spec.RunUID != runUID {
		return Corruptf("segment %s belongs to run UID %s, not %s", seg.Name, seg.Spec.RunUID, runUID)
	}
	if seg.Spec.Index != index {
		return Corruptf("segment %s is at index %d, expected %d (out of order)", seg.Name, seg.Spec.Index, index)
	}
	if (index == 0) != (seg.Spec.Previous == "") {
		return Corruptf("segment %s at index %d has previous %q", seg.Name, index, seg.Spec.Previous)
	}
	return nil
}

// Verify checks a chain already in hand, index 0 first, against head:
// each segment's content (Check), then Walk over it.
func Verify(head exagentv1.TranscriptHead, runUID string, segs []Segment) error {
	if int32(len(segs)) != head.Segments {
		return Corruptf("the head counts %d segments, the chain has %d", head.Segments, len(segs))
	}
	_, err := Walk(head, runUID, func(_ string, index int32) (Segment, error) {
		seg := segs[index]
		return seg, Check(seg)
	})
	return err
}
