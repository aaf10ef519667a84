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

package controllers

import (
	"context"
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
)

// The run controller's side of the sealed transcript (docs/architecture.md §10): the
// engine works on the hot status; before it needs a sealed value (a call's
// arguments, which policy and the schema check read) the value is put back
// inline, and before any IO the chain is read and verified — the model is
// sent the whole transcript, and a chain that does not hold ends the run
// before the IO, with TranscriptCorrupt.

// chain returns the run's verified chain, read once per reconcile.
func (r *AgentRunReconciler) chain(ctx context.Context, sc *scope) ([]segment.Segment, error) {
	if sc.chainRead {
		return sc.chain, nil
	}
	if r.Segments == nil {
		return nil, nil
	}
	// The chain the working status names: a turn of a conversation takes
	// its base in this very reconcile (waitTurn), before it is stored.
	run := sc.run
	if sc.status.Transcript != sc.run.Status.Transcript {
		cp := *sc.run
		cp.Status.Transcript = sc.status.Transcript
		run = &cp
	}
	chain, err := r.Segments.Chain(ctx, run)
	if err != nil {
		return nil, err
	}
	sc.chain, sc.chainRead = chain, true
	return chain, nil
}

// sealed tells whether the run has anything in segments.
func sealed(s *loop.Status) bool { return s.Transcript != nil && s.Transcript.Segments > 0 }

// hydrate puts back inline the sealed values the engine reads: the
// arguments of the run's calls (policy and the schema check read them)
// and, at Finish, the final answer (status.output keeps its beginning).
// The refs stay, so the next seal drops them again without a write. A
// chain that does not hold ends the run (failPermanent).
func (r *AgentRunReconciler) hydrate(ctx context.Context, sc *scope) error {
	need := false
	for i := range sc.status.Calls {
		if c := &sc.status.Calls[i]; c.ArgsRef != nil && c.Args == "" {
			need = true
		}
	}
	h := sc.status.History
	final := sc.status.Cursor.Stage == exagentv1.StageFinish && len(h) > 0 && h[len(h)-1].ContentRef != nil && h[len(h)-1].Content == ""
	if !need && !final {
		return nil
	}
	chain, err := r.chain(ctx, sc)
	if err != nil {
		return r.failPermanent(sc, err)
	}
	values := segment.ValuesOf(chain)
	st := *sc.status.DeepCopy()
	for i := range st.Calls {
		c := &st.Calls[i]
		if c.ArgsRef == nil || c.Args != "" {
			continue
		}
		v, err := values.Resolve(c.ArgsRef)
		if err != nil {
			return r.failPermanent(sc, fmt.Errorf("call %s: %w", c.ID, err))
		}
		c.Args = v
	}
	if final {
		last := &st.History[len(st.History)-1]
		v, err := values.Resolve(last.ContentRef)
		if err != nil {
			return r.failPermanent(sc, fmt.Errorf("the final answer: %w", err))
		}
		last.Content = v
	}
	sc.status = st // not a change: sealing gives back what was read
	return nil
}

// prepareIO runs after the engine chose an IO and before its intent is
// committed: for a run with a sealed transcript it verifies the chain
// and gives the model request the whole transcript. A chain that does not
// hold ends the run from the status before the intent (no IO, nothing
// charged).
func (r *AgentRunReconciler) prepareIO(ctx context.Context, sc *scope, before loop.Status) error {
	act := &sc.action
	if act.Kind != loop.ActCallModel && act.Kind != loop.ActRunTools {
		return nil
	}
	if !sealed(&sc.status) && (act.Model == nil || act.Model.Sealed == nil) {
		return nil
	}
	chain, err := r.chain(ctx, sc)
	if err == nil && act.Model != nil && !act.Model.Sampling { // a sampling request sends the server's messages only
		var msgs []exagentv1.Message
		if msgs, err = segment.Transcript(chain, act.Model.Messages); err == nil {
			m := *act.Model
			m.Messages, m.Sealed, m.Instructions = loop.LeadWith(msgs, m.Instructions), nil, nil
			act.Model = &m
		}
	}
	if err == nil {
		return nil
	}
	if !loop.IsPermanent(err) {
		return err
	}
	sc.status = before
	return r.failPermanent(sc, err)
}

// priorCallIDs are the tool-call ids of a whole transcript.
func priorCallIDs(msgs []exagentv1.Message) map[string]bool {
	ids := map[string]bool{}
	for i := range msgs {
		for _, tc := range msgs[i].ToolCalls {
			ids[tc.ID] = true
		}
	}
	return ids
}
