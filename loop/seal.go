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
	"encoding/base64"
	"encoding/json"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
	"github.com/exagent-io/exagent/internal/segment"
)

// Defaults of the hot status (docs/architecture.md §10).
const (
	// DefaultHotBytes is the budget of the encoded status Seal keeps to.
	DefaultHotBytes = 32 << 10
	// DefaultValueBytes: a single message content, argument or result
	// larger than this is sealed into a segment as soon as it is committed.
	DefaultValueBytes = 4 << 10
	// MinValueBytes is the smallest threshold accepted (a ref costs ~200 bytes).
	MinValueBytes = 512
	// outputPreview is how much of a sealed final answer status.output keeps.
	outputPreview = 1024
	// segmentOverhead is what a segment's envelope costs beyond its content.
	segmentOverhead = 512
)

// SealConfig is what Seal needs besides the status: the run's identity
// (segments name it) and the budgets.
type SealConfig struct {
	RunName string
	RunUID  string
	// HotBytes is the target size of the encoded status; 0 means DefaultHotBytes.
	HotBytes int
	// ValueBytes is the size past which one value is sealed; 0 means DefaultValueBytes.
	ValueBytes int
}

func (c SealConfig) hot() int {
	if c.HotBytes <= 0 {
		return DefaultHotBytes
	}
	return c.HotBytes
}

func (c SealConfig) value() int { return valueLimit(c.ValueBytes) }

// valueLimit is the size past which one value leaves the hot status: n,
// DefaultValueBytes when unset, never below MinValueBytes. Seal and the
// engine's size checks (hotSize) use the same one, so what the engine
// counts as a ref is what Seal turns into one.
func valueLimit(n int) int {
	if n <= 0 {
		return DefaultValueBytes
	}
	return max(n, MinValueBytes)
}

// sealable reports whether a value leaves the hot status for a segment:
// its size once JSON-escaped — what the stored status pays for it, up to
// six times its length — passes limit.
func sealable(v string, limit int) bool {
	if v == "" || 6*len(v)+2 <= limit {
		return false // even escaped at worst it fits: no need to look
	}
	return len(v) > limit || escapedLen(v) > limit
}

// Seal moves out of the status what it no longer needs hot, into new
// segments chained after status.transcript.head, and returns the status
// that references them. The caller creates the segments (idempotently:
// same content, same name) and only then commits the status; a crash in
// between leaves segments nobody references, which the next Seal of the
// same content re-creates under the same names.
//
// Two kinds of things move:
//   - every value (message content, tool arguments, a call's result, the
//     final answer) whose escaped size passes ValueBytes, at once: the
//     status keeps a ref; a value referenced twice (a call's args and its
//     message's arguments, a result and its tool message) is stored once;
//   - when the status is over HotBytes/4: the oldest messages (never
//     the last one, which the cursor needs) until it is under HotBytes/8,
//     every closed call of a past step with its approvals, and the
//     receipts of decisions at past revisions. Sealing early keeps every
//     write of a long run about the size of its first ones (a write costs
//     more the bigger the object, docs/architecture.md §8); HotBytes is the ceiling,
//     not the working size.
//
// Everything fits a segment by construction: a value of up to
// MaxValueBytes is stored base64 when escaping would cost more (at most
// MaxSegmentValueLength), and a journal entry too large for a segment
// with its values inline has them sealed first, so no content the engine
// stores can make Seal fail.
//
// Seal is deterministic: the same status and config give the same
// segments, so a retried commit re-creates exactly what a crashed one did.
func Seal(s Status, cfg SealConfig) (Status, []segment.Segment, error) {
	st := clone(s)
	if st.Transcript == nil {
		st.Transcript = &exagentv1.TranscriptHead{}
	}
	head := st.Transcript
	sl := &sealer{cfg: cfg, st: &st, head: head, known: map[string]*exagentv1.ValueRef{},
		waiting: map[string][]*exagentv1.ValueRef{}}
	sl.collectRefs()
	limit := cfg.value()
	sl.eachValue(func(v *string, ref **exagentv1.ValueRef, isOutput bool) { sl.sealValue(v, ref, isOutput, limit) })
	var old journal
	if encodedLen(&st) > cfg.hot()/4 {
		old = sl.takeOld()
		old.fit(sl)
	}
	if err := sl.flushValues(); err != nil {
		return s, nil, err
	}
	if err := sl.emitJournal(old); err != nil {
		return s, nil, err
	}
	if len(sl.out) == 0 && s.Transcript == nil {
		st.Transcript = nil // nothing sealed yet: no head to show
	}
	return st, sl.out, nil
}

type sealer struct {
	cfg  SealConfig
	st   *Status
	head *exagentv1.TranscriptHead
	// known maps a value's sha256 to a ref that already names its segment.
	known map[string]*exagentv1.ValueRef
	// pending values to seal, in the order met, and the refs to fill with
	// the name of the segment each lands in.
	pending []exagentv1.SegmentValue
	waiting map[string][]*exagentv1.ValueRef
	out     []segment.Segment
}

func (sl *sealer) collectRefs() {
	sl.eachValue(func(_ *string, ref **exagentv1.ValueRef, _ bool) {
		if r := *ref; r != nil && r.Segment != "" {
			sl.known[r.SHA256] = r
		}
	})
}

// eachValue visits every sealable value field of the status.
func (sl *sealer) eachValue(f func(v *string, ref **exagentv1.ValueRef, isOutput bool)) {
	st := sl.st
	for i := range st.History {
		messageValues(&st.History[i], f)
	}
	for i := range st.Calls {
		callValues(&st.Calls[i], f)
	}
	f(&st.Output, &st.OutputRef, true)
}

func messageValues(m *exagentv1.Message, f func(v *string, ref **exagentv1.ValueRef, isOutput bool)) {
	f(&m.Content, &m.ContentRef, false)
	for k := range m.ToolCalls {
		f(&m.ToolCalls[k].Arguments, &m.ToolCalls[k].ArgumentsRef, false)
	}
}

func callValues(c *exagentv1.ToolCall, f func(v *string, ref **exagentv1.ValueRef, isOutput bool)) {
	f(&c.Args, &c.ArgsRef, false)
	if c.Outcome != nil {
		f(&c.Outcome.Result, &c.Outcome.ResultRef, false)
	}
}

// sealValue moves one value past limit out: its ref points to the segment
// that holds it (one already written, or one flushValues writes).
func (sl *sealer) sealValue(v *string, ref **exagentv1.ValueRef, isOutput bool, limit int) {
	if !sealable(*v, limit) {
		return
	}
	sum := canonical.SHA256Hex(*v)
	inline := keep(*v, isOutput, limit)
	if r := *ref; r != nil && r.SHA256 == sum && r.Segment != "" {
		*v = inline // a hydrated copy of a sealed value
		return
	}
	if r, ok := sl.known[sum]; ok {
		c := *r
		*ref, *v = &c, inline
		return
	}
	r := &exagentv1.ValueRef{SHA256: sum, Bytes: int64(len(*v))}
	if _, ok := sl.waiting[sum]; !ok {
		sl.pending = append(sl.pending, segmentValue(sum, *v))
	}
	sl.waiting[sum] = append(sl.waiting[sum], r)
	*ref, *v = r, inline
}

// segmentValue is how a value is written into a segment: as it is, or
// base64 when its JSON escaping would take more room (a value of control
// characters takes six times its length escaped, four thirds in base64).
func segmentValue(sum, v string) exagentv1.SegmentValue {
	if escapedLen(v) > base64.StdEncoding.EncodedLen(len(v))+2 {
		return exagentv1.SegmentValue{SHA256: sum, Encoding: exagentv1.ValueBase64, Data: base64.StdEncoding.EncodeToString([]byte(v))}
	}
	return exagentv1.SegmentValue{SHA256: sum, Data: v}
}

// keep is what stays inline of a sealed value: nothing, except the
// beginning of the final answer, which people read in status.output.
func keep(v string, isOutput bool, limit int) string {
	if !isOutput {
		return ""
	}
	return bound(v, min(outputPreview, limit))
}

// flushValues packs the pending values into segments of at most
// MaxSegmentBytes and fills the refs with the segment names.
func (sl *sealer) flushValues() error {
	var batch []exagentv1.SegmentValue
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var n int64
		for _, v := range batch {
			n += sealedBytes(v)
		}
		seg, err := sl.emit(exagentv1.AgentRunSegmentSpec{Values: batch, Bytes: n})
		if err != nil {
			return err
		}
		for _, v := range batch {
			for _, r := range sl.waiting[v.SHA256] {
				r.Segment = seg.Name
			}
		}
		batch, size = nil, 0
		return nil
	}
	for _, v := range sl.pending {
		n := escapedLen(v.Data) + len(v.Encoding) + 100
		if size+n+segmentOverhead > exagentv1.MaxSegmentBytes || len(batch) == 64 {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, v)
		size += n
	}
	return flush()
}

// sealedBytes is the length of the value v holds (decoded).
func sealedBytes(v exagentv1.SegmentValue) int64 {
	if v.Encoding == exagentv1.ValueBase64 {
		return int64(base64.StdEncoding.DecodedLen(len(v.Data)) - strings.Count(v.Data[max(len(v.Data)-2, 0):], "="))
	}
	return int64(len(v.Data))
}

// journal is what sealOld moves: messages, closed calls of past steps
// with their approvals, and receipts of past revisions.
type journal struct {
	msgs      []exagentv1.Message
	calls     []exagentv1.ToolCall
	approvals []exagentv1.Approval
	receipts  []exagentv1.Receipt
}

func (j *journal) empty() bool {
	return len(j.msgs) == 0 && len(j.calls) == 0 && len(j.approvals) == 0 && len(j.receipts) == 0
}

// takeOld takes out of the status the oldest messages (all but the last)
// until it is under an eighth of its budget, the closed calls of past
// steps with their approvals, and the receipts of decisions at past
// revisions: a decision at the current revision finds its receipt hot,
// an older one reads it through the chain (NeedSealedReceipts).
func (sl *sealer) takeOld() journal {
	st := sl.st
	var j journal
	sealedCall := map[string]bool{}
	keepCalls := st.Calls[:0:0]
	for i := range st.Calls {
		c := &st.Calls[i]
		if c.Step < st.Cursor.Step && !unresolved(c) {
			j.calls = append(j.calls, *c)
			sealedCall[c.ID] = true
			continue
		}
		keepCalls = append(keepCalls, *c)
	}
	keepApprovals := st.Approvals[:0:0]
	for i := range st.Approvals {
		if sealedCall[st.Approvals[i].CallID] {
			j.approvals = append(j.approvals, st.Approvals[i])
			continue
		}
		keepApprovals = append(keepApprovals, st.Approvals[i])
	}
	keepReceipts := st.Receipts[:0:0]
	for i := range st.Receipts {
		if st.Receipts[i].Revision < st.Revision {
			j.receipts = append(j.receipts, st.Receipts[i])
			continue
		}
		keepReceipts = append(keepReceipts, st.Receipts[i])
	}
	st.Calls, st.Approvals, st.Receipts = keepCalls, keepApprovals, keepReceipts
	target := sl.cfg.hot() / 8
	cut := 0
	size := encodedLen(st)
	for cut < len(st.History)-1 && size > target {
		size -= jsonLen(st.History[cut]) + 1
		cut++
	}
	j.msgs = append([]exagentv1.Message(nil), st.History[:cut]...)
	st.History = append([]exagentv1.Message(nil), st.History[cut:]...)
	return j
}

// fit seals every inline value of an entry that would not fit a segment
// with them (a message of 33 values under a large ValueBytes): what is
// left of an entry is bounded by its other fields' maxLengths.
func (j *journal) fit(sl *sealer) {
	all := func(v *string, ref **exagentv1.ValueRef, isOutput bool) { sl.sealValue(v, ref, isOutput, 0) }
	for i := range j.msgs {
		if !fitsSegment(j.msgs[i]) {
			messageValues(&j.msgs[i], all)
		}
	}
	for i := range j.calls {
		if !fitsSegment(j.calls[i]) {
			callValues(&j.calls[i], all)
		}
	}
}

func fitsSegment(v any) bool { return jsonLen(v)+segmentOverhead <= exagentv1.MaxSegmentBytes }

// emitJournal writes messages, calls, approvals and receipts in as many
// segments as MaxSegmentBytes needs, in order.
func (sl *sealer) emitJournal(j journal) error {
	if j.empty() {
		return nil
	}
	var spec exagentv1.AgentRunSegmentSpec
	size := 0
	flush := func() error {
		if len(spec.Messages) == 0 && len(spec.Calls) == 0 && len(spec.Approvals) == 0 && len(spec.Receipts) == 0 {
			return nil
		}
		first := sl.head.Messages
		spec.FirstMessage = first
		for i := range spec.Messages {
			spec.Bytes += inlineBytes(&spec.Messages[i])
		}
		if _, err := sl.emit(spec); err != nil {
			return err
		}
		sl.head.Messages += int64(len(spec.Messages))
		for i := range spec.Messages {
			sl.head.Bytes += segment.MessageBytes(&spec.Messages[i])
		}
		sl.head.Calls += int64(len(spec.Calls))
		sl.head.Receipts += int64(len(spec.Receipts))
		spec, size = exagentv1.AgentRunSegmentSpec{}, 0
		return nil
	}
	// add appends one entry of n bytes to the segment being filled
	// (items of its kind so far), flushing it first when it is full.
	add := func(n, items int, put func()) error {
		if size+n+segmentOverhead > exagentv1.MaxSegmentBytes || items >= 512 {
			if err := flush(); err != nil {
				return err
			}
		}
		put()
		size += n
		return nil
	}
	for i := range j.msgs {
		if err := add(jsonLen(j.msgs[i]), len(spec.Messages), func() { spec.Messages = append(spec.Messages, j.msgs[i]) }); err != nil {
			return err
		}
	}
	for i := range j.calls {
		if err := add(jsonLen(j.calls[i]), len(spec.Calls), func() { spec.Calls = append(spec.Calls, j.calls[i]) }); err != nil {
			return err
		}
	}
	for i := range j.approvals {
		if err := add(jsonLen(j.approvals[i]), len(spec.Approvals), func() { spec.Approvals = append(spec.Approvals, j.approvals[i]) }); err != nil {
			return err
		}
	}
	for i := range j.receipts {
		if err := add(jsonLen(j.receipts[i]), len(spec.Receipts), func() { spec.Receipts = append(spec.Receipts, j.receipts[i]) }); err != nil {
			return err
		}
	}
	return flush()
}

// emit chains spec after the head and names it by its content hash.
func (sl *sealer) emit(spec exagentv1.AgentRunSegmentSpec) (segment.Segment, error) {
	spec.RunName, spec.RunUID = sl.cfg.RunName, sl.cfg.RunUID
	spec.Index = sl.head.Segments
	spec.Previous = sl.head.Head
	name, size, err := segment.Name(&spec)
	if err != nil {
		return segment.Segment{}, err
	}
	if size+segmentOverhead > exagentv1.MaxSegmentBytes {
		return segment.Segment{}, errorf(KindTooLarge, exagentv1.ReasonStatusTooLarge,
			"a transcript segment would take %d bytes, over %d", size, exagentv1.MaxSegmentBytes)
	}
	seg := segment.Segment{Name: name, Spec: spec, Size: size}
	sl.out = append(sl.out, seg)
	sl.head.Head = name
	sl.head.Segments++
	sl.head.SegmentBytes += int64(size)
	return seg, nil
}

// inlineBytes is the transcript content a sealed message carries inline.
func inlineBytes(m *exagentv1.Message) int64 {
	n := int64(len(m.Content))
	for i := range m.ToolCalls {
		n += int64(len(m.ToolCalls[i].Arguments))
	}
	return n
}

func jsonLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 1 << 20
	}
	return len(b)
}

func encodedLen(s *Status) int { return jsonLen(s) }
