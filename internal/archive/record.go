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

package archive

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// Record is the data of an io.exagent.run.archived CloudEvent: what a
// receiver decodes. Write streams it field by field in this order.
type Record struct {
	// Run is the AgentRun as stored (managedFields dropped): metadata,
	// spec and final status, whose history is the transcript's tail.
	Run exagentv1.AgentRun `json:"run"`
	// Conversation is set on a turn of a Conversation, archived with its
	// conversation: which one, and the turn's place among the turns
	// deleted with it (a receiver holds the whole conversation once it
	// holds turns 1..turns).
	Conversation *Conversation `json:"conversation,omitempty"`
	// Transcript is the whole logical transcript: the messages sealed in
	// the segments, then status.history, every sealed value inline.
	Transcript []exagentv1.Message `json:"transcript"`
	// Calls is every tool call of the run, past steps' included, with
	// arguments and results inline.
	Calls []exagentv1.ToolCall `json:"calls"`
	// Approvals is every approval ever requested of the run.
	Approvals []exagentv1.Approval `json:"approvals"`
	// Receipts is every receipt of an applied decision, in order.
	Receipts []exagentv1.Receipt `json:"receipts"`
	// Output is the whole final answer of a Succeeded run.
	Output string `json:"output,omitempty"`
	// Decisions are the run's ApprovalDecisions (managedFields dropped):
	// each one's actor, reason and, once applied, its receipt.
	Decisions []exagentv1.ApprovalDecision `json:"decisions"`
	// Segments names the run's segments in chain order (index 0 first):
	// their names are the hashes of their contents.
	Segments []string `json:"segments"`
}

// Conversation is what a turn's record says of its conversation. The
// turn's transcript holds the earlier turns' messages too (it continues
// them, by reference to their segments); run.status.turn.firstMessage is
// where its own begin.
type Conversation struct {
	// Name and UID of the Conversation.
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Turn is the turn's place (from 1, in the conversation's order, as
	// its status.turns numbers them) and Turns how many turns were deleted
	// with the conversation.
	Turn  int `json:"turn"`
	Turns int `json:"turns"`
}

// Event is the CloudEvent envelope of a Record.
type Event struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Subject         string    `json:"subject"`
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	Data            Record    `json:"data"`
}

// Input is what a record is written from: the run read past the cache
// (whole status), its verified chain, index 0 first, and its decisions.
type Input struct {
	Run       *exagentv1.AgentRun
	Chain     []segment.Segment
	Decisions []exagentv1.ApprovalDecision
	// Conversation is set for a turn archived with its conversation.
	Conversation *Conversation
	// ID of the CloudEvent (loop.ArchiveID) and At, its time.
	ID string
	At time.Time
}

// ContentType of the body Write produces.
const ContentType = "application/cloudevents+json"

// Write streams in's record as one CloudEvent in structured JSON mode. It
// is deterministic: the same input writes the same bytes. A sealed value
// the chain does not hold (or holds edited) is an error: a record that
// cannot be proven is not sent.
func Write(w io.Writer, in Input) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	e := &encoder{w: bw}
	run := in.Run.DeepCopy()
	run.ManagedFields = nil
	run.APIVersion, run.Kind = exagentv1.GroupVersion.String(), "AgentRun"
	st := &run.Status
	values := segment.ValuesOf(in.Chain)

	e.raw(`{"specversion":"1.0","id":`)
	e.value(in.ID)
	e.raw(`,"source":`)
	e.value(fmt.Sprintf("/apis/%s/namespaces/%s/agentruns/%s", exagentv1.GroupVersion.String(), run.Namespace, run.Name))
	e.raw(`,"type":`)
	e.value(exagentv1.CloudEventArchived)
	e.raw(`,"subject":`)
	e.value(string(st.Phase))
	e.raw(`,"time":`)
	e.value(in.At.UTC().Truncate(time.Second))
	e.raw(`,"datacontenttype":"application/json","data":{"run":`)
	e.value(run)
	if in.Conversation != nil {
		e.raw(`,"conversation":`)
		e.value(in.Conversation)
	}

	e.raw(`,"transcript":[`)
	n := 0
	each := func(msgs []exagentv1.Message) {
		for i := range msgs {
			if e.err != nil {
				return
			}
			m, err := values.ResolveMessages(msgs[i : i+1])
			if err != nil {
				e.fail(fmt.Errorf("transcript message %d: %w", n, err))
				return
			}
			e.item(n, m[0])
			n++
		}
	}
	for i := range in.Chain {
		each(in.Chain[i].Spec.Messages)
	}
	each(st.History)

	e.raw(`],"calls":[`)
	n = 0
	call := func(calls []exagentv1.ToolCall) {
		for i := range calls {
			if e.err != nil {
				return
			}
			c, err := resolveCall(values, &calls[i])
			if err != nil {
				e.fail(err)
				return
			}
			e.item(n, c)
			n++
		}
	}
	for i := range in.Chain {
		call(in.Chain[i].Spec.Calls)
	}
	call(st.Calls)

	e.raw(`],"approvals":[`)
	n = 0
	for i := range in.Chain {
		for k := range in.Chain[i].Spec.Approvals {
			e.item(n, &in.Chain[i].Spec.Approvals[k])
			n++
		}
	}
	for i := range st.Approvals {
		e.item(n, &st.Approvals[i])
		n++
	}

	e.raw(`],"receipts":[`)
	n = 0
	for i := range in.Chain {
		for k := range in.Chain[i].Spec.Receipts {
			e.item(n, &in.Chain[i].Spec.Receipts[k])
			n++
		}
	}
	for i := range st.Receipts {
		e.item(n, &st.Receipts[i])
		n++
	}
	e.raw(`]`)

	if out, err := output(values, st); err != nil {
		e.fail(err)
	} else if out != "" {
		e.raw(`,"output":`)
		e.value(out)
	}

	e.raw(`,"decisions":[`)
	for i := range in.Decisions {
		d := in.Decisions[i].DeepCopy()
		d.ManagedFields = nil
		d.APIVersion, d.Kind = exagentv1.GroupVersion.String(), "ApprovalDecision"
		e.item(i, d)
	}
	e.raw(`],"segments":[`)
	for i := range in.Chain {
		e.item(i, in.Chain[i].Name)
	}
	e.raw(`]}}`)
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

// resolveCall is c with its sealed arguments and result inline.
func resolveCall(values segment.Values, c *exagentv1.ToolCall) (*exagentv1.ToolCall, error) {
	if c.ArgsRef == nil && (c.Outcome == nil || c.Outcome.ResultRef == nil) {
		return c, nil
	}
	out := c.DeepCopy()
	if out.ArgsRef != nil {
		v, err := values.Resolve(out.ArgsRef)
		if err != nil {
			return nil, fmt.Errorf("the arguments of call %s: %w", c.ID, err)
		}
		out.Args, out.ArgsRef = v, nil
	}
	if o := out.Outcome; o != nil && o.ResultRef != nil {
		v, err := values.Resolve(o.ResultRef)
		if err != nil {
			return nil, fmt.Errorf("the result of call %s: %w", c.ID, err)
		}
		o.Result, o.ResultRef = v, nil
	}
	return out, nil
}

// output is the whole final answer: status.output, or the value its ref names.
func output(values segment.Values, st *exagentv1.AgentRunStatus) (string, error) {
	if st.OutputRef == nil {
		return st.Output, nil
	}
	v, err := values.Resolve(st.OutputRef)
	if err != nil {
		return "", fmt.Errorf("the final answer: %w", err)
	}
	return v, nil
}

// encoder writes JSON pieces, keeping the first error.
type encoder struct {
	w   *bufio.Writer
	err error
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *encoder) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *encoder) value(v any) {
	if e.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.fail(fmt.Errorf("encoding the archive: %w", err))
		return
	}
	_, e.err = e.w.Write(b)
}

// item writes v as element i of an array.
func (e *encoder) item(i int, v any) {
	if i > 0 {
		e.raw(",")
	}
	e.value(v)
}
