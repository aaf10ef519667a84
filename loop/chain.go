package loop

import (
	"encoding/base64"
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// chainHint tells the person reading TranscriptCorrupt what to do.
const chainHint = "; the run's sealed transcript cannot be proven, so no IO is made with it: " +
	"restore the segment from a backup (its name is its content hash) or create a new run"

// chainf is the error of a chain that does not hold: permanent, ended with
// Fail(s, exagentv1.ReasonTranscriptCorrupt, message).
func chainf(format string, args ...any) *Error {
	e := errorf(KindInvalidContinuation, exagentv1.ReasonTranscriptCorrupt, format, args...)
	e.Message += chainHint
	return e
}

// ChainError is the error VerifySegment and VerifyChain return for a
// segment that is missing from the store (the caller found none by name).
func ChainError(format string, args ...any) error { return chainf(format, args...) }

// VerifySegment checks one segment read from the store: its name is the
// hash of its content, it belongs to the run, and it sits where the chain
// expects it (index, and the name the next segment or the head gave).
func VerifySegment(seg Segment, want string, index int32, runUID string) error {
	if seg.Name != want {
		return chainf("segment %s: expected %s at index %d", seg.Name, want, index)
	}
	got, _, err := SegmentName(&seg.Spec)
	if err != nil {
		return chainf("segment %s: %v", seg.Name, err)
	}
	if got != seg.Name {
		return chainf("segment %s was edited: its content hashes to %s", seg.Name, got)
	}
	return verifyLink(seg, want, index, runUID)
}

// verifyLink is VerifySegment without the content hash, for a segment
// whose content was verified when it was read.
func verifyLink(seg Segment, want string, index int32, runUID string) error {
	if seg.Name != want {
		return chainf("segment %s: expected %s at index %d", seg.Name, want, index)
	}
	if seg.Spec.RunUID != runUID {
		return chainf("segment %s belongs to run UID %s, not %s", seg.Name, seg.Spec.RunUID, runUID)
	}
	if seg.Spec.Index != index {
		return chainf("segment %s is at index %d, expected %d (out of order)", seg.Name, seg.Spec.Index, index)
	}
	if (index == 0) != (seg.Spec.Previous == "") {
		return chainf("segment %s at index %d has previous %q", seg.Name, index, seg.Spec.Previous)
	}
	return nil
}

// VerifyChain checks a whole chain, index 0 first, against the head the
// status holds: every segment's content hash, each linked to the one
// before, the last one the head, and the counts the head records.
func VerifyChain(head exagentv1.TranscriptHead, runUID string, segs []Segment) error {
	return verifyChain(head, runUID, segs, VerifySegment)
}

// VerifyLinks is VerifyChain for segments whose content hashes were
// verified when they were read (a cache of verified segments): the links
// and counts only.
func VerifyLinks(head exagentv1.TranscriptHead, runUID string, segs []Segment) error {
	return verifyChain(head, runUID, segs, verifyLink)
}

func verifyChain(head exagentv1.TranscriptHead, runUID string, segs []Segment,
	verify func(Segment, string, int32, string) error) error {
	if int32(len(segs)) != head.Segments {
		return chainf("the head counts %d segments, the chain has %d", head.Segments, len(segs))
	}
	var msgs, calls, receipts, bytes int64
	prev := ""
	for i := range segs {
		s := &segs[i]
		want := s.Name
		if i == len(segs)-1 {
			want = head.Head
		}
		if err := verify(*s, want, int32(i), runUID); err != nil {
			return err
		}
		if s.Spec.Previous != prev {
			return chainf("segment %s follows %q, expected %q", s.Name, s.Spec.Previous, prev)
		}
		if len(s.Spec.Messages) > 0 && s.Spec.FirstMessage != msgs {
			return chainf("segment %s starts at message %d, expected %d", s.Name, s.Spec.FirstMessage, msgs)
		}
		msgs += int64(len(s.Spec.Messages))
		calls += int64(len(s.Spec.Calls))
		receipts += int64(len(s.Spec.Receipts))
		for k := range s.Spec.Messages {
			bytes += messageBytes(&s.Spec.Messages[k])
		}
		prev = s.Name
	}
	if msgs != head.Messages || calls != head.Calls || receipts != head.Receipts || bytes != head.Bytes {
		return chainf("the head counts %d messages, %d calls, %d receipts and %d bytes; the chain holds %d, %d, %d and %d",
			head.Messages, head.Calls, head.Receipts, head.Bytes, msgs, calls, receipts, bytes)
	}
	return nil
}

// Values indexes the sealed values of a chain by sha256.
type Values map[string]exagentv1.SegmentValue

// ValuesOf collects the values of segs.
func ValuesOf(segs []Segment) Values {
	v := Values{}
	for i := range segs {
		for _, sv := range segs[i].Spec.Values {
			v[sv.SHA256] = sv
		}
	}
	return v
}

// Resolve returns the value a ref points to, decoded, checking its hash.
func (v Values) Resolve(ref *exagentv1.ValueRef) (string, error) {
	sv, ok := v[ref.SHA256]
	if !ok {
		return "", chainf("value %s (in segment %s) is not in the run's chain", short(ref.SHA256), ref.Segment)
	}
	d := sv.Data
	switch sv.Encoding {
	case "":
	case exagentv1.ValueBase64:
		b, err := base64.StdEncoding.DecodeString(sv.Data)
		if err != nil {
			return "", chainf("value %s in segment %s is not base64: %v", short(ref.SHA256), ref.Segment, err)
		}
		d = string(b)
	default:
		return "", chainf("value %s in segment %s has unknown encoding %q", short(ref.SHA256), ref.Segment, sv.Encoding)
	}
	if canonical.SHA256Hex(d) != ref.SHA256 || int64(len(d)) != ref.Bytes {
		return "", chainf("value %s in segment %s does not match its ref", short(ref.SHA256), ref.Segment)
	}
	return d, nil
}

// ResolveMessages returns msgs with every contentRef and argumentsRef
// replaced by its value (the refs cleared): what a model is sent.
func (v Values) ResolveMessages(msgs []exagentv1.Message) ([]exagentv1.Message, error) {
	out := make([]exagentv1.Message, len(msgs))
	for i := range msgs {
		m := *msgs[i].DeepCopy()
		if m.ContentRef != nil {
			d, err := v.Resolve(m.ContentRef)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			m.Content, m.ContentRef = d, nil
		}
		for k := range m.ToolCalls {
			tc := &m.ToolCalls[k]
			if tc.ArgumentsRef != nil {
				d, err := v.Resolve(tc.ArgumentsRef)
				if err != nil {
					return nil, fmt.Errorf("message %d: %w", i, err)
				}
				tc.Arguments, tc.ArgumentsRef = d, nil
			}
		}
		out[i] = m
	}
	return out, nil
}

// Transcript is the whole logical transcript of a run: the chain's
// messages, then the tail in status.history, refs resolved.
func Transcript(segs []Segment, tail []exagentv1.Message) ([]exagentv1.Message, error) {
	var all []exagentv1.Message
	for i := range segs {
		all = append(all, segs[i].Spec.Messages...)
	}
	all = append(all, tail...)
	return ValuesOf(segs).ResolveMessages(all)
}

// SealedCalls returns the journal entries of past steps the chain holds,
// then the status's own, with args and results resolved.
func SealedCalls(segs []Segment, hot []exagentv1.ToolCall) ([]exagentv1.ToolCall, error) {
	v := ValuesOf(segs)
	var all []exagentv1.ToolCall
	for i := range segs {
		all = append(all, segs[i].Spec.Calls...)
	}
	all = append(all, hot...)
	out := make([]exagentv1.ToolCall, len(all))
	for i := range all {
		c := *all[i].DeepCopy()
		if c.ArgsRef != nil {
			d, err := v.Resolve(c.ArgsRef)
			if err != nil {
				return nil, fmt.Errorf("call %s: %w", c.ID, err)
			}
			c.Args = d
		}
		if c.Outcome != nil && c.Outcome.ResultRef != nil {
			d, err := v.Resolve(c.Outcome.ResultRef)
			if err != nil {
				return nil, fmt.Errorf("call %s: %w", c.ID, err)
			}
			c.Outcome.Result = d
		}
		out[i] = c
	}
	return out, nil
}

// SealedReceipts returns the receipts the chain holds, in the order their
// decisions were applied.
func SealedReceipts(segs []Segment) []exagentv1.Receipt {
	var out []exagentv1.Receipt
	for i := range segs {
		for k := range segs[i].Spec.Receipts {
			out = append(out, *segs[i].Spec.Receipts[k].DeepCopy())
		}
	}
	return out
}
