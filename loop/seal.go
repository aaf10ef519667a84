package loop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Defaults of the hot status (DESIGN.md §10).
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

func (c SealConfig) value() int {
	if c.ValueBytes <= 0 {
		return DefaultValueBytes
	}
	return max(c.ValueBytes, MinValueBytes)
}

// Segment is one AgentRunSegment to create: its name is the sha256 (hex)
// of its spec's canonical JSON.
type Segment struct {
	Name string
	Spec exagentv1.AgentRunSegmentSpec
	// Size is the length of the spec's canonical JSON (0 when unknown).
	Size int
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
//     final answer) over ValueBytes, at once: the status keeps a ref;
//     a value referenced twice (a call's args and its message's
//     arguments, a result and its tool message) is stored once;
//   - when the status is over HotBytes/4: the oldest messages (never
//     the last one, which the cursor needs) until it is under HotBytes/8,
//     and every closed call of a past step with its approvals. Sealing
//     early keeps every write of a long run about the size of its first
//     ones (a write costs more the bigger the object, DESIGN.md §8);
//     HotBytes is the ceiling, not the working size.
//
// Seal is deterministic: the same status and config give the same
// segments, so a retried commit re-creates exactly what a crashed one did.
func Seal(s Status, cfg SealConfig) (Status, []Segment, error) {
	st := clone(s)
	if st.Transcript == nil {
		st.Transcript = &exagentv1.TranscriptHead{}
	}
	head := st.Transcript
	sl := &sealer{cfg: cfg, st: &st, head: head, known: map[string]*exagentv1.ValueRef{}}
	sl.collectRefs()
	sl.sealValues()
	if err := sl.flushValues(); err != nil {
		return s, nil, err
	}
	if encodedLen(&st) > cfg.hot()/4 {
		if err := sl.sealOld(); err != nil {
			return s, nil, err
		}
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
	// known maps a value's sha256 to the ref already pointing to it.
	known map[string]*exagentv1.ValueRef
	// pending values to seal, in the order met, and the refs to fill.
	pending []exagentv1.SegmentValue
	waiting map[string][]*exagentv1.ValueRef
	out     []Segment
}

func (sl *sealer) collectRefs() {
	sl.eachValue(func(_ *string, ref **exagentv1.ValueRef) {
		if r := *ref; r != nil && r.Segment != "" {
			sl.known[r.SHA256] = r
		}
	})
}

// eachValue visits every sealable value field of the status.
func (sl *sealer) eachValue(f func(v *string, ref **exagentv1.ValueRef)) {
	st := sl.st
	for i := range st.History {
		m := &st.History[i]
		f(&m.Content, &m.ContentRef)
		for k := range m.ToolCalls {
			f(&m.ToolCalls[k].Arguments, &m.ToolCalls[k].ArgumentsRef)
		}
	}
	for i := range st.Calls {
		c := &st.Calls[i]
		f(&c.Args, &c.ArgsRef)
		if c.Outcome != nil {
			f(&c.Outcome.Result, &c.Outcome.ResultRef)
		}
	}
	f(&st.Output, &st.OutputRef)
}

func (sl *sealer) sealValues() {
	sl.waiting = map[string][]*exagentv1.ValueRef{}
	limit := sl.cfg.value()
	sl.eachValue(func(v *string, ref **exagentv1.ValueRef) {
		if len(*v) <= limit {
			return
		}
		sum := sha256Hex(*v)
		isOutput := v == &sl.st.Output
		if r := *ref; r != nil && r.SHA256 == sum && r.Segment != "" {
			*v = keep(*v, isOutput, limit) // a hydrated copy of a sealed value
			return
		}
		if r, ok := sl.known[sum]; ok {
			c := *r
			*ref = &c
			*v = keep(*v, isOutput, limit)
			return
		}
		r := &exagentv1.ValueRef{SHA256: sum, Bytes: int64(len(*v))}
		*ref = r
		if _, ok := sl.waiting[sum]; !ok {
			sl.pending = append(sl.pending, exagentv1.SegmentValue{SHA256: sum, Data: *v})
		}
		sl.waiting[sum] = append(sl.waiting[sum], r)
		sl.known[sum] = r
		*v = keep(*v, isOutput, limit)
	})
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
			n += int64(len(v.Data))
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
		n := jsonLen(v.Data) + 100
		if size+n+segmentOverhead > exagentv1.MaxSegmentBytes || len(batch) == 64 {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, v)
		size += n
	}
	if err := flush(); err != nil {
		return err
	}
	// Refs copied from known before their segment was named point to the
	// same value: name them too.
	sl.eachValue(func(_ *string, ref **exagentv1.ValueRef) {
		if r := *ref; r != nil && r.Segment == "" {
			if k := sl.known[r.SHA256]; k != nil {
				r.Segment = k.Segment
			}
		}
	})
	return nil
}

// sealOld moves the oldest messages (all but the last) until the status
// is under half its budget, and the closed calls of past steps with their
// approvals, into segments.
func (sl *sealer) sealOld() error {
	st := sl.st
	var calls []exagentv1.ToolCall
	sealedCall := map[string]bool{}
	keepCalls := st.Calls[:0:0]
	for i := range st.Calls {
		c := &st.Calls[i]
		if c.Step < st.Cursor.Step && !unresolved(c) {
			calls = append(calls, *c)
			sealedCall[c.ID] = true
			continue
		}
		keepCalls = append(keepCalls, *c)
	}
	var approvals []exagentv1.Approval
	keepApprovals := st.Approvals[:0:0]
	for i := range st.Approvals {
		if sealedCall[st.Approvals[i].CallID] {
			approvals = append(approvals, st.Approvals[i])
			continue
		}
		keepApprovals = append(keepApprovals, st.Approvals[i])
	}
	st.Calls, st.Approvals = keepCalls, keepApprovals
	target := sl.cfg.hot() / 8
	cut := 0
	size := encodedLen(st)
	for cut < len(st.History)-1 && size > target {
		size -= jsonLen(st.History[cut]) + 1
		cut++
	}
	msgs := append([]exagentv1.Message(nil), st.History[:cut]...)
	st.History = append([]exagentv1.Message(nil), st.History[cut:]...)
	if len(msgs) == 0 && len(calls) == 0 && len(approvals) == 0 {
		return nil
	}
	return sl.emitJournal(msgs, calls, approvals)
}

// emitJournal writes messages, calls and approvals in as many segments as
// MaxSegmentBytes needs, in order.
func (sl *sealer) emitJournal(msgs []exagentv1.Message, calls []exagentv1.ToolCall, approvals []exagentv1.Approval) error {
	var spec exagentv1.AgentRunSegmentSpec
	size := 0
	flush := func() error {
		if len(spec.Messages) == 0 && len(spec.Calls) == 0 && len(spec.Approvals) == 0 {
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
			sl.head.Bytes += messageBytes(&spec.Messages[i])
		}
		sl.head.Calls += int64(len(spec.Calls))
		spec, size = exagentv1.AgentRunSegmentSpec{}, 0
		return nil
	}
	room := func(n, items int) bool {
		return size+n+segmentOverhead <= exagentv1.MaxSegmentBytes && items < 512
	}
	for i := range msgs {
		n := jsonLen(msgs[i])
		if !room(n, len(spec.Messages)) {
			if err := flush(); err != nil {
				return err
			}
		}
		spec.Messages = append(spec.Messages, msgs[i])
		size += n
	}
	for i := range calls {
		n := jsonLen(calls[i])
		if !room(n, len(spec.Calls)) {
			if err := flush(); err != nil {
				return err
			}
		}
		spec.Calls = append(spec.Calls, calls[i])
		size += n
	}
	for i := range approvals {
		n := jsonLen(approvals[i])
		if !room(n, len(spec.Approvals)) {
			if err := flush(); err != nil {
				return err
			}
		}
		spec.Approvals = append(spec.Approvals, approvals[i])
		size += n
	}
	return flush()
}

// emit chains spec after the head and names it by its content hash.
func (sl *sealer) emit(spec exagentv1.AgentRunSegmentSpec) (Segment, error) {
	spec.RunName, spec.RunUID = sl.cfg.RunName, sl.cfg.RunUID
	spec.Index = sl.head.Segments
	spec.Previous = sl.head.Head
	name, size, err := SegmentName(&spec)
	if err != nil {
		return Segment{}, err
	}
	if size+segmentOverhead > exagentv1.MaxSegmentBytes {
		return Segment{}, errorf(KindTooLarge, ReasonStatusTooLarge,
			"a transcript segment would take %d bytes, over %d", size, exagentv1.MaxSegmentBytes)
	}
	seg := Segment{Name: name, Spec: spec, Size: size}
	sl.out = append(sl.out, seg)
	sl.head.Head = name
	sl.head.Segments++
	sl.head.SegmentBytes += int64(size)
	return seg, nil
}

// SegmentName is the name of a segment with this spec: the sha256 (hex) of
// its canonical JSON, and that JSON's length.
func SegmentName(spec *exagentv1.AgentRunSegmentSpec) (string, int, error) {
	b, err := CanonicalJSON(spec)
	if err != nil {
		return "", 0, fmt.Errorf("segment content: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), len(b), nil
}

// inlineBytes is the transcript content a sealed message carries inline.
func inlineBytes(m *exagentv1.Message) int64 {
	n := int64(len(m.Content))
	for i := range m.ToolCalls {
		n += int64(len(m.ToolCalls[i].Arguments))
	}
	return n
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func jsonLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 1 << 20
	}
	return len(b)
}

func encodedLen(s *Status) int { return jsonLen(s) }
