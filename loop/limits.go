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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// The limits a run holds (docs/architecture.md §4.7). Limits are in no
// fingerprint — an Agent's limits may be edited while its runs wait or
// work — and the Env reads them from the current Agent. Were that all, a
// raised maxToolCalls would widen every paused run of the Agent: the
// approver approved a call of a run bounded by the old limits. So a run
// journals the limits it starts with (status.limits) in the commit of its
// first claim, and from then on is held to the stricter of those and the
// current ones: an Agent edit narrows a running run, never widens it. A
// run journaled before status.limits existed journals them at its next
// claim, from the Agent as it is then.
//
// maxTranscriptBytes is not journaled: it bounds what the run stores,
// not what it spends, and the manager's cap (--max-transcript-bytes)
// applies to every run whenever it was started.

// holding is the Env with the journaled limits l in force as well:
// limits() and the active-time limit are the stricter of the Env's and
// l's. e itself when l is nil.
func (e *Env) holding(l *exagentv1.RunLimits) *Env {
	if l == nil || l == e.held {
		return e
	}
	h := *e
	h.held = stricterRunLimits(e.held, l)
	if l.ActiveTime != nil && (h.activeNever || l.ActiveTime.Duration < h.activeLimit) {
		h.activeLimit, h.activeNever = max(l.ActiveTime.Duration, 0), false
	}
	return &h
}

// forRun is the Env holding the limits s journaled: every exported
// transition that gates on a limit or reserves active time starts with
// it, so no caller can widen a run by building its Env without them.
func (e *Env) forRun(s *Status) *Env { return e.holding(s.Limits) }

// heldLimits narrows cur by the journaled limits h (nil: none).
func heldLimits(cur exagentv1.LimitsSpec, h *exagentv1.RunLimits) exagentv1.LimitsSpec {
	if h == nil {
		return cur
	}
	cur.MaxSteps = minPtr(cur.MaxSteps, h.MaxSteps)
	cur.MaxToolCalls = minPtr(cur.MaxToolCalls, h.MaxToolCalls)
	cur.MaxTokens = minPtr(cur.MaxTokens, h.MaxTokens)
	cur.MaxRuns = minPtr(cur.MaxRuns, h.MaxRuns)
	return cur
}

// stricterRunLimits is the stricter of a and b, field by field (nil: no bound).
func stricterRunLimits(a, b *exagentv1.RunLimits) *exagentv1.RunLimits {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := &exagentv1.RunLimits{
		MaxSteps:     minPtr(a.MaxSteps, b.MaxSteps),
		MaxToolCalls: minPtr(a.MaxToolCalls, b.MaxToolCalls),
		MaxTokens:    minPtr(a.MaxTokens, b.MaxTokens),
		MaxRuns:      minPtr(a.MaxRuns, b.MaxRuns),
		MaxDepth:     minPtr(a.MaxDepth, b.MaxDepth),
		ActiveTime:   a.ActiveTime,
	}
	if b.ActiveTime != nil && (a.ActiveTime == nil || b.ActiveTime.Duration < a.ActiveTime.Duration) {
		out.ActiveTime = b.ActiveTime
	}
	out.MaxWait = a.MaxWait
	if b.MaxWait != nil && (a.MaxWait == nil || b.MaxWait.Duration < a.MaxWait.Duration) {
		out.MaxWait = b.MaxWait
	}
	return out
}

// runLimits are the limits the run holds now, as status.limits journals them.
func (e *Env) runLimits() *exagentv1.RunLimits {
	l := e.limits()
	out := &exagentv1.RunLimits{
		MaxSteps:     copyPtr(l.MaxSteps),
		MaxToolCalls: copyPtr(l.MaxToolCalls),
		MaxTokens:    copyPtr(l.MaxTokens),
		MaxRuns:      copyPtr(l.MaxRuns),
		MaxDepth:     new(e.depthLeft()),
	}
	if d, never := e.ActiveTimeLimit(); !never {
		out.ActiveTime = &metav1.Duration{Duration: d}
	}
	if d, bounded := e.maxWait(); bounded {
		out.MaxWait = &metav1.Duration{Duration: d}
	}
	return out
}

// journalLimits journals the limits the run holds at its first claim (or
// the first claim since a version that journaled none); later claims keep
// what is journaled.
func journalLimits(st *Status, env *Env) {
	if st.Limits == nil {
		st.Limits = env.runLimits()
	}
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
