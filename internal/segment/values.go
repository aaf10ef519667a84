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
	"encoding/base64"
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

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
		return "", Corruptf("value %s (in segment %s) is not in the run's chain", canonical.Short(ref.SHA256), ref.Segment)
	}
	d := sv.Data
	switch sv.Encoding {
	case "":
	case exagentv1.ValueBase64:
		b, err := base64.StdEncoding.DecodeString(sv.Data)
		if err != nil {
			return "", Corruptf("value %s in segment %s is not base64: %v", canonical.Short(ref.SHA256), ref.Segment, err)
		}
		d = string(b)
	default:
		return "", Corruptf("value %s in segment %s has unknown encoding %q", canonical.Short(ref.SHA256), ref.Segment, sv.Encoding)
	}
	if canonical.SHA256Hex(d) != ref.SHA256 || int64(len(d)) != ref.Bytes {
		return "", Corruptf("value %s in segment %s does not match its ref", canonical.Short(ref.SHA256), ref.Segment)
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
