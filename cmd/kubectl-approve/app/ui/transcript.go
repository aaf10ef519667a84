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

package ui

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/clip"
	"github.com/exagent-io/exagent/internal/segment"
)

// A run's transcript is shown a page at a time, never whole (it may be
// tens of MiB): the latest page is the tail in status.history; each older
// page is one AgentRunSegment (≤ 256 KiB), read by name with the person's
// own credentials and checked before it is shown — its content proves its
// name, it belongs to this run, and it sits where the link says in the
// chain. Each page links to the one before it (segment.previous), as the
// chain itself does.

const (
	// maxShownValue bounds one message's content or one call's arguments
	// or result on a page; the rest is named, not sent to the browser.
	maxShownValue = 64 << 10
	// maxValueSegments bounds the segments read to resolve the sealed
	// values one page shows.
	maxValueSegments = 8
)

// transcriptView is one page of the transcript.
type transcriptView struct {
	Title    string
	Messages []messageView
	Calls    []callView
	// Older names the page before this one (the segment and its index
	// in the chain); HasOlder is false on the first page.
	HasOlder   bool
	OlderName  string
	OlderIndex int32
	Latest     bool
}

type messageView struct {
	N          int64
	Role       string
	Content    string
	ToolCallID string
	ToolCalls  []toolCallView
}

type toolCallView struct {
	ID, Name, Args string
}

// transcriptPage reads the page q names (?segment=NAME&index=N), or the
// latest one.
func transcriptPage(ctx context.Context, c client.Client, run *exagentv1.AgentRun, q url.Values) (transcriptView, error) {
	head := run.Status.Transcript
	name := q.Get("segment")
	if name == "" || head == nil {
		v := transcriptView{Latest: true, Title: "Latest messages"}
		first := int64(0)
		if head != nil {
			first = head.Messages
			if head.Segments > 0 {
				v.older(head.Head, head.Segments-1)
			}
		}
		values := resolveValues(ctx, c, run, run.Status.History, nil)
		v.Messages = messagesOf(run.Status.History, first, values)
		return v, nil
	}
	index, err := strconv.ParseInt(q.Get("index"), 10, 32)
	if err != nil || index < 0 || index >= int64(head.Segments) {
		return transcriptView{}, fmt.Errorf("the transcript of run %q has %d segments: index %q is not one of them", run.Name, head.Segments, q.Get("index"))
	}
	seg, err := readSegment(ctx, c, run, name, int32(index))
	if err != nil {
		return transcriptView{}, err
	}
	v := transcriptView{Title: fmt.Sprintf("Segment %d of %d", index+1, head.Segments)}
	if index > 0 {
		v.older(seg.Spec.Previous, int32(index-1))
	}
	values := resolveValues(ctx, c, run, seg.Spec.Messages, &seg)
	v.Messages = messagesOf(seg.Spec.Messages, seg.Spec.FirstMessage, values)
	for i := range seg.Spec.Calls {
		v.Calls = append(v.Calls, callOf(&seg.Spec.Calls[i], values))
	}
	return v, nil
}

func (v *transcriptView) older(name string, index int32) {
	v.HasOlder, v.OlderName, v.OlderIndex = true, name, index
}

// readSegment reads segment name of run and checks that it is the chain's
// segment at index: its content hashes to its name, it names this run.
func readSegment(ctx context.Context, c client.Client, run *exagentv1.AgentRun, name string, index int32) (segment.Segment, error) {
	obj := &exagentv1.AgentRunSegment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: name}, obj); err != nil {
		return segment.Segment{}, fmt.Errorf("reading segment %s of run %q (it needs get on agentrunsegments.exagent.io in %s): %w", name, run.Name, run.Namespace, err)
	}
	seg := segment.Segment{Name: obj.Name, Spec: obj.Spec}
	if err := segment.Check(seg); err != nil {
		return segment.Segment{}, fmt.Errorf("segment %s of run %q cannot be shown: %w", name, run.Name, err)
	}
	if seg.Spec.RunUID != string(run.UID) || seg.Spec.Index != index {
		return segment.Segment{}, fmt.Errorf("segment %s is not segment %d of run %q", name, index, run.Name)
	}
	return seg, nil
}

// resolveValues reads the segments the sealed values of msgs live in (at
// most maxValueSegments; own is the page's segment, already read). A value
// that cannot be read is shown by its size instead.
func resolveValues(ctx context.Context, c client.Client, run *exagentv1.AgentRun, msgs []exagentv1.Message, own *segment.Segment) segment.Values {
	var segs []segment.Segment
	seen := map[string]bool{}
	if own != nil {
		segs, seen[own.Name] = append(segs, *own), true
	}
	want := func(ref *exagentv1.ValueRef) {
		if ref == nil || seen[ref.Segment] || len(seen) >= maxValueSegments {
			return
		}
		seen[ref.Segment] = true
		obj := &exagentv1.AgentRunSegment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: ref.Segment}, obj); err == nil && obj.Spec.RunUID == string(run.UID) {
			segs = append(segs, segment.Segment{Name: obj.Name, Spec: obj.Spec})
		}
	}
	for i := range msgs {
		want(msgs[i].ContentRef)
		for k := range msgs[i].ToolCalls {
			want(msgs[i].ToolCalls[k].ArgumentsRef)
		}
	}
	for i := range run.Status.Calls {
		want(run.Status.Calls[i].ArgsRef)
		if o := run.Status.Calls[i].Outcome; o != nil {
			want(o.ResultRef)
		}
	}
	return segment.ValuesOf(segs)
}

// value is s, or the sealed value ref names (its hash checked), bounded
// for the page.
func value(s string, ref *exagentv1.ValueRef, values segment.Values) string {
	if s == "" && ref != nil {
		v, err := values.Resolve(ref)
		if err != nil {
			return fmt.Sprintf("(sealed value of %d bytes in segment %s, not shown: %v)", ref.Bytes, ref.Segment, err)
		}
		s = v
	}
	if len(s) > maxShownValue {
		return clip.Bytes(s, maxShownValue, clip.Ellipsis) + fmt.Sprintf("\n(%d bytes; the first %d KiB are shown)", len(s), maxShownValue>>10)
	}
	return s
}

func messagesOf(msgs []exagentv1.Message, first int64, values segment.Values) []messageView {
	out := make([]messageView, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		mv := messageView{N: first + int64(i) + 1, Role: string(m.Role), Content: value(m.Content, m.ContentRef, values), ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			mv.ToolCalls = append(mv.ToolCalls, toolCallView{ID: tc.ID, Name: tc.Name, Args: shownJSON(value(tc.Arguments, tc.ArgumentsRef, values), maxShownValue)})
		}
		out = append(out, mv)
	}
	return out
}
