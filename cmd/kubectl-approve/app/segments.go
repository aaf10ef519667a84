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

package app

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// segmentReader reads a run's sealed transcript (docs/architecture.md §10) with the
// user's own credentials: AgentRunSegments are ordinary objects under
// RBAC, never a side channel. Segments are immutable and named by their
// content hash, so a copy read once is kept for the command's life (a
// follower reads each new segment once).
type segmentReader struct {
	c client.Reader
	// byName holds the segments read so far, each proven by its name.
	byName map[string]segment.Segment
	// listed is the run UID whose segments were listed once.
	listed types.UID
}

func newSegmentReader(c client.Reader) *segmentReader {
	return &segmentReader{c: c, byName: map[string]segment.Segment{}}
}

// sealed tells whether part of run's transcript is in segments.
func sealed(run *exagentv1.AgentRun) bool {
	return run.Status.Transcript != nil && run.Status.Transcript.Segments > 0
}

// chain returns run's verified chain, index 0 first: one List by the
// run-uid label the first time, then a Get per segment not yet read, as
// segment.Walk follows the chain back from status.transcript.head. A
// segment that is missing, edited, of another run or out of place is an
// error naming it and why.
func (r *segmentReader) chain(ctx context.Context, run *exagentv1.AgentRun) ([]segment.Segment, error) {
	if !sealed(run) {
		return nil, nil
	}
	head := run.Status.Transcript
	if _, ok := r.byName[head.Head]; !ok && r.listed != run.UID {
		if err := r.list(ctx, run); err != nil {
			return nil, err
		}
	}
	chain, err := segment.Walk(*head, string(run.UID), func(name string, index int32) (segment.Segment, error) {
		return r.proven(ctx, run, name, index)
	})
	if _, bad := segment.AsCorrupt(err); bad {
		return nil, chainError(run, err) // what the walk found; read errors are worded already
	}
	return chain, err
}

// list reads every segment of run at once (the common case: a whole
// transcript is wanted) and keeps those whose content proves their name.
func (r *segmentReader) list(ctx context.Context, run *exagentv1.AgentRun) error {
	list := &exagentv1.AgentRunSegmentList{}
	if err := r.c.List(ctx, list, client.InNamespace(run.Namespace),
		client.MatchingLabels{exagentv1.LabelRunUID: string(run.UID)}); err != nil {
		return readError(run, "list", err)
	}
	for i := range list.Items {
		_ = r.keep(segment.Segment{Name: list.Items[i].Name, Spec: list.Items[i].Spec}) // an edited one is read again by the walk, which says why
	}
	r.listed = run.UID
	return nil
}

// keep caches seg if its content hashes to its name, and says why not:
// an edited one is left out, so that the next read of it says so again.
func (r *segmentReader) keep(seg segment.Segment) error {
	if err := segment.Check(seg); err != nil {
		return err
	}
	r.byName[seg.Name] = seg
	return nil
}

// proven returns segment name of run, at index in its chain, with its
// content proven, as the chain walk needs it (a cached copy was proven
// when it was kept).
func (r *segmentReader) proven(ctx context.Context, run *exagentv1.AgentRun, name string, index int32) (segment.Segment, error) {
	if seg, ok := r.byName[name]; ok {
		return seg, nil
	}
	seg, err := r.get(ctx, run, name, index)
	if err != nil {
		return segment.Segment{}, err
	}
	return seg, r.keep(seg)
}

// segment returns segment name of run for one value a ref names: its
// content is not proven here — the ref's sha256 proves the value.
func (r *segmentReader) segment(ctx context.Context, run *exagentv1.AgentRun, name string) (segment.Segment, error) {
	if seg, ok := r.byName[name]; ok {
		return seg, nil
	}
	seg, err := r.get(ctx, run, name, -1)
	if err != nil {
		return segment.Segment{}, err
	}
	_ = r.keep(seg) // cached only if proven; Resolve checks the value either way
	return seg, nil
}

// get reads segment name of run from the store (at index in the chain,
// for the message; -1 when read for one value).
func (r *segmentReader) get(ctx context.Context, run *exagentv1.AgentRun, name string, index int32) (segment.Segment, error) {
	obj := &exagentv1.AgentRunSegment{}
	if err := r.c.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			at := ""
			if index >= 0 {
				at = fmt.Sprintf(" (index %d)", index)
			}
			return segment.Segment{}, chainError(run, fmt.Errorf("segment %s%s is missing: deleted, or the run's status names a segment never stored", name, at))
		}
		return segment.Segment{}, readError(run, "get", err)
	}
	return segment.Segment{Name: obj.Name, Spec: obj.Spec}, nil
}

// named returns the segments of run the given names point to (refs of
// the hot status), reading only those: a value's ref carries its sha256,
// so segment.Values.Resolve proves the value without the chain.
func (r *segmentReader) named(ctx context.Context, run *exagentv1.AgentRun, names []string) ([]segment.Segment, error) {
	var out []segment.Segment
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		seg, err := r.segment(ctx, run, name)
		if err != nil {
			return nil, err
		}
		if seg.Spec.RunUID != string(run.UID) {
			return nil, chainError(run, fmt.Errorf("segment %s belongs to run UID %s, not %s", seg.Name, seg.Spec.RunUID, run.UID))
		}
		out = append(out, seg)
	}
	return out, nil
}

// refNames are the segments the refs of msgs, of the hot calls and of the
// output point to.
func refNames(run *exagentv1.AgentRun, msgs []exagentv1.Message) []string {
	var names []string
	add := func(ref *exagentv1.ValueRef) {
		if ref != nil {
			names = append(names, ref.Segment)
		}
	}
	for i := range msgs {
		add(msgs[i].ContentRef)
		for k := range msgs[i].ToolCalls {
			add(msgs[i].ToolCalls[k].ArgumentsRef)
		}
	}
	for i := range run.Status.Calls {
		c := &run.Status.Calls[i]
		add(c.ArgsRef)
		if c.Edit != nil {
			add(c.Edit.ModelArgsRef)
		}
		if c.Outcome != nil {
			add(c.Outcome.ResultRef)
		}
	}
	add(run.Status.OutputRef)
	return names
}

// withValues returns a copy of run whose hot calls and output carry their
// sealed values inline, resolved from segs.
func withValues(run *exagentv1.AgentRun, segs []segment.Segment) (*exagentv1.AgentRun, error) {
	out := run.DeepCopy()
	values := segment.ValuesOf(segs)
	st := &out.Status
	for i := range st.Calls {
		c := &st.Calls[i]
		if c.ArgsRef != nil && c.Args == "" {
			v, err := values.Resolve(c.ArgsRef)
			if err != nil {
				return nil, chainError(run, fmt.Errorf("the arguments of call %s: %w", c.ID, err))
			}
			c.Args = v
		}
		if ed := c.Edit; ed != nil && ed.ModelArgsRef != nil && ed.ModelArgs == "" {
			v, err := values.Resolve(ed.ModelArgsRef)
			if err != nil {
				return nil, chainError(run, fmt.Errorf("the model's arguments of call %s: %w", c.ID, err))
			}
			ed.ModelArgs = v
		}
		if o := c.Outcome; o != nil && o.ResultRef != nil && o.Result == "" {
			v, err := values.Resolve(o.ResultRef)
			if err != nil {
				return nil, chainError(run, fmt.Errorf("the result of call %s: %w", c.ID, err))
			}
			o.Result = v
		}
	}
	if st.OutputRef != nil {
		v, err := values.Resolve(st.OutputRef)
		if err != nil {
			return nil, chainError(run, fmt.Errorf("the output: %w", err))
		}
		st.Output = v
	}
	return out, nil
}

// journal is a run's whole record: the logical transcript, every call
// and every approval, sealed or hot, with every value inline.
type journal struct {
	messages  []exagentv1.Message
	calls     []exagentv1.ToolCall
	approvals []exagentv1.Approval
}

// journalOf is run's journal: its chain's (index 0 first, verified)
// messages, calls and approvals, then the hot status's, every value inline.
func journalOf(run *exagentv1.AgentRun, chain []segment.Segment) (*journal, error) {
	st := &run.Status
	msgs, err := segment.Transcript(chain, st.History)
	if err != nil {
		return nil, chainError(run, err)
	}
	calls, err := segment.SealedCalls(chain, st.Calls)
	if err != nil {
		return nil, chainError(run, err)
	}
	var approvals []exagentv1.Approval
	for i := range chain {
		approvals = append(approvals, chain[i].Spec.Approvals...)
	}
	approvals = append(approvals, st.Approvals...)
	return &journal{messages: msgs, calls: calls, approvals: approvals}, nil
}

func (j *journal) call(id string) *exagentv1.ToolCall {
	for i := range j.calls {
		if j.calls[i].ID == id {
			return &j.calls[i]
		}
	}
	return nil
}

// chainError says which run's sealed transcript does not hold, and why:
// the segment format's own words (segment.CorruptError carries no error
// kind: people read this). Not wrapped: the message is the whole story.
func chainError(run *exagentv1.AgentRun, err error) error {
	return fmt.Errorf("the sealed transcript of run %q cannot be read: %v", run.Name, err)
}

// readError explains a failed read of segments; a Forbidden one names the
// permission the user lacks (not wrapped: FormatError would print only the
// apiserver's message).
func readError(run *exagentv1.AgentRun, verb string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("run %q keeps part of its transcript in AgentRunSegments (kubectl get ars -n %s -l %s=%s), "+
			"and you may not %s them: reading them needs get and list on agentrunsegments.exagent.io in namespace %q "+
			"(the exagent-viewer, -approver and -resolver ClusterRoles grant it): %v",
			run.Name, run.Namespace, exagentv1.LabelRun, run.Name, verb, run.Namespace, err)
	}
	return fmt.Errorf("reading the segments of run %q: %w", run.Name, err)
}
