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

package telemetry

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Attributes of exagent's own, beside the GenAI ones.
const (
	attrRun       = attribute.Key("exagent.run")
	attrNamespace = attribute.Key("exagent.namespace")
	attrAttempt   = attribute.Key("exagent.attempt")
	attrHolder    = attribute.Key("exagent.holder")
	attrPhase     = attribute.Key("exagent.phase")
	attrReason    = attribute.Key("exagent.reason")
	attrApproval  = attribute.Key("exagent.approval.id")
	attrDecision  = attribute.Key("exagent.decision")
	attrActor     = attribute.Key("exagent.actor")
	attrOutcome   = attribute.Key("exagent.outcome")
)

// Tracer traces this process's attempts of runs. A nil *Tracer does
// nothing, which is what a process without OTEL_* configuration has.
//
// The open attempt spans are memory held per run: the commit that releases
// an attempt ends its span, Forget ends the span of a run that was deleted
// while this process owned it (no commit will release it), and past
// MaxOpenAttempts the least recently used span is ended (reason
// SpanEvicted) to make room, so no tenant can grow the map without bound.
type Tracer struct {
	tracer trace.Tracer

	mu       sync.Mutex
	attempts *simplelru.LRU[types.NamespacedName, attemptSpan]
	maxOpen  int
}

// MaxOpenAttempts bounds the attempt spans a Tracer keeps open: far more
// runs than one process owns at once (every owned run holds a claim and,
// most of the time, IO in flight; see executor.DefaultMaxInFlight).
const MaxOpenAttempts = 16384

// Reasons an attempt span ends with when no commit released it.
const (
	reasonProcessStopped = "ProcessStopped"
	reasonRunDeleted     = "RunDeleted"
	reasonSpanEvicted    = "SpanEvicted"
)

type attemptSpan struct {
	attempt int64
	span    trace.Span
}

// New traces with tp.
func New(tp trace.TracerProvider) *Tracer { return newTracer(tp, MaxOpenAttempts) }

func newTracer(tp trace.TracerProvider, maxOpen int) *Tracer {
	// No eviction callback: the Tracer ends what it evicts itself, outside
	// the cases where it removes a span to end it with its own outcome.
	attempts, err := simplelru.NewLRU[types.NamespacedName, attemptSpan](maxOpen, nil)
	if err != nil {
		panic(fmt.Sprintf("telemetry: %v", err)) // maxOpen <= 0: a programming error
	}
	return &Tracer{tracer: tp.Tracer("github.com/exagent-io/exagent"), attempts: attempts, maxOpen: maxOpen}
}

// SetTraceparent gives next a traceparent when this commit makes holder the owner
// of a run that has none: the run's trace starts with this attempt, whose
// span will take the announced span id.
func (t *Tracer) SetTraceparent(old, next *exagentv1.AgentRunStatus, holder string) {
	if t == nil || next.Traceparent != "" || !startsAttempt(old, next, holder) {
		return
	}
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:])
	_, _ = rand.Read(sid[:])
	next.Traceparent = fmt.Sprintf("00-%s-%s-01", tid, sid)
}

func startsAttempt(old, next *exagentv1.AgentRunStatus, holder string) bool {
	c := next.Claim
	return c != nil && c.Holder == holder && next.Phase == exagentv1.PhaseRunning &&
		(old.Claim == nil || old.Claim.Attempt != c.Attempt || old.Phase != exagentv1.PhaseRunning)
}

func ownedBy(st *exagentv1.AgentRunStatus, holder string) (int64, bool) {
	if c := st.Claim; c != nil && c.Holder == holder && st.Phase == exagentv1.PhaseRunning {
		return c.Attempt, true
	}
	return 0, false
}

// parse reads a W3C traceparent.
func parse(tp string) (trace.SpanContext, bool) {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(parts[1])
	sid, err2 := trace.SpanIDFromHex(parts[2])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}), true
}

// Committed follows a status write that landed (old → written) by holder:
// it starts the span of an attempt this commit began, records the
// approvals it requested or decided as span events, and ends the span of
// an attempt it released. conversation names the Conversation the run is a
// turn of ("" for a run on its own): gen_ai.conversation.id is the
// conversation's, not the turn's.
func (t *Tracer) Committed(key types.NamespacedName, agent, conversation string, old, written *exagentv1.AgentRunStatus, holder string, now time.Time) {
	if t == nil {
		return
	}
	remote, ok := parse(written.Traceparent)
	if !ok {
		return
	}
	if sp := t.span(key, 0); sp != nil {
		// The pause's requests, on the attempt span the pause ends.
		for _, a := range written.Approvals {
			if was := old.Approval(a.ID); a.State == exagentv1.ApprovalPending && (was == nil || was.State != exagentv1.ApprovalPending) {
				sp.AddEvent("exagent.approval.requested", trace.WithTimestamp(now), trace.WithAttributes(
					attrApproval.String(a.ID), semconv.GenAIToolCallID(a.CallID), semconv.GenAIToolName(toolOf(written, a.CallID))))
			}
		}
	}
	if prev, owned := ownedBy(old, holder); owned {
		if cur, still := ownedBy(written, holder); !still || cur != prev {
			t.endAttempt(key, prev, written, now)
		}
	} else {
		// A commit of a run this process does not own: a decision, an
		// expiry, a recovery — or a decision together with the claim that
		// resumes the run. Decisions become events of a short span.
		t.decisions(remote, key, old, written, now)
	}
	if startsAttempt(old, written, holder) {
		t.startAttempt(remote, key, agent, conversationID(key, conversation), old.Traceparent == "", written, holder, now)
	} else if cur, owned := ownedBy(written, holder); owned && t.span(key, cur) == nil {
		// This process owns the attempt but never saw the commit that
		// claimed it (its answer was lost, though the write landed): the
		// attempt's span starts here, so the attempt is still traced and
		// its end still closes a span.
		t.startAttempt(remote, key, agent, conversationID(key, conversation), false, written, holder, now)
	}
}

func toolOf(st *exagentv1.AgentRunStatus, callID string) string {
	if c := st.Call(callID); c != nil {
		return c.Tool
	}
	return ""
}

// conversationID is gen_ai.conversation.id: namespace/conversation for a
// turn of a Conversation, namespace/run for a run on its own.
func conversationID(key types.NamespacedName, conversation string) string {
	if conversation != "" {
		return key.Namespace + "/" + conversation
	}
	return key.Namespace + "/" + key.Name
}

func (t *Tracer) startAttempt(remote trace.SpanContext, key types.NamespacedName, agent, conversation string, first bool,
	st *exagentv1.AgentRunStatus, holder string, now time.Time) {
	ctx := context.Background()
	if first {
		// The traceparent was made for this span: it is the trace's root.
		ctx = context.WithValue(ctx, presetKey{}, presetIDs{trace: remote.TraceID(), span: remote.SpanID()})
	} else {
		ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
	}
	_, sp := t.tracer.Start(ctx, "invoke_agent "+agent, trace.WithTimestamp(now), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(agent),
			semconv.GenAIConversationID(conversation),
			attrRun.String(key.Name), attrNamespace.String(key.Namespace), attrAttempt.Int64(st.Claim.Attempt), attrHolder.String(holder)))
	for _, a := range st.Approvals {
		if a.State == exagentv1.ApprovalApproved && a.Actor != nil {
			sp.AddEvent("exagent.approval.resumed", trace.WithTimestamp(now), trace.WithAttributes(
				attrApproval.String(a.ID), attrActor.String(a.Actor.Username)))
		}
	}
	t.mu.Lock()
	if prev, ok := t.attempts.Peek(key); ok {
		prev.span.End(trace.WithTimestamp(now)) // an attempt this process lost without noticing
	} else if t.attempts.Len() >= t.maxOpen {
		// Full: the attempt least recently traced makes room. Its span
		// ends here, saying why, rather than never.
		if _, old, ok := t.attempts.RemoveOldest(); ok {
			old.span.SetAttributes(attrReason.String(reasonSpanEvicted))
			old.span.End(trace.WithTimestamp(now))
		}
	}
	t.attempts.Add(key, attemptSpan{attempt: st.Claim.Attempt, span: sp})
	t.mu.Unlock()
}

// Forget ends the open span of a run that no longer exists (deleted while
// this process owned an attempt of it): no commit will release it.
func (t *Tracer) Forget(key types.NamespacedName, now time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	a, ok := t.attempts.Peek(key)
	if ok {
		t.attempts.Remove(key)
	}
	t.mu.Unlock()
	if ok {
		a.span.SetAttributes(attrReason.String(reasonRunDeleted))
		a.span.End(trace.WithTimestamp(now))
	}
}

// Open is the number of attempt spans open.
func (t *Tracer) Open() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attempts.Len()
}

func (t *Tracer) endAttempt(key types.NamespacedName, attempt int64, st *exagentv1.AgentRunStatus, now time.Time) {
	t.mu.Lock()
	a, ok := t.attempts.Peek(key)
	if ok && a.attempt == attempt {
		t.attempts.Remove(key)
	}
	t.mu.Unlock()
	if !ok || a.attempt != attempt {
		return
	}
	a.span.SetAttributes(attrPhase.String(string(st.Phase)), attrReason.String(st.Reason))
	switch st.Phase {
	case exagentv1.PhaseFailed, exagentv1.PhaseExpired, exagentv1.PhaseUncertain:
		a.span.SetStatus(codes.Error, st.Message)
	}
	a.span.End(trace.WithTimestamp(now))
}

// decisions records, in a short span of the run's trace, each approval the
// commit decided: the decision, the actor and the reason.
func (t *Tracer) decisions(remote trace.SpanContext, key types.NamespacedName, old, written *exagentv1.AgentRunStatus, now time.Time) {
	var decided []exagentv1.Approval
	for _, a := range written.Approvals {
		if was := old.Approval(a.ID); was != nil && was.State == exagentv1.ApprovalPending && a.State != exagentv1.ApprovalPending {
			decided = append(decided, a)
		}
	}
	resolved := 0
	for _, c := range written.Calls {
		if was := old.Call(c.ID); was != nil && was.State == exagentv1.CallUncertain && c.State != exagentv1.CallUncertain {
			resolved++
		}
	}
	if len(decided) == 0 && resolved == 0 {
		return
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	_, sp := t.tracer.Start(ctx, "decide "+key.Name, trace.WithTimestamp(now),
		trace.WithAttributes(attrRun.String(key.Name), attrNamespace.String(key.Namespace), attrPhase.String(string(written.Phase))))
	for _, a := range decided {
		actor := ""
		if a.Actor != nil {
			actor = a.Actor.Username
		}
		sp.AddEvent("exagent.approval.decided", trace.WithTimestamp(now), trace.WithAttributes(attrApproval.String(a.ID),
			attrDecision.String(string(a.State)), attrActor.String(actor), attribute.String("exagent.reason", a.Reason),
			semconv.GenAIToolCallID(a.CallID)))
	}
	for _, c := range written.Calls {
		if was := old.Call(c.ID); was != nil && was.State == exagentv1.CallUncertain && c.State != exagentv1.CallUncertain {
			ev := []attribute.KeyValue{semconv.GenAIToolCallID(c.ID), semconv.GenAIToolName(c.Tool), attrOutcome.String(string(c.State))}
			if c.Outcome != nil {
				ev = append(ev, attrActor.String(c.Outcome.ResolvedBy))
			}
			sp.AddEvent("exagent.call.resolved", trace.WithTimestamp(now), trace.WithAttributes(ev...))
		}
	}
	sp.End(trace.WithTimestamp(now))
}

func (t *Tracer) span(key types.NamespacedName, attempt int64) trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.attempts.Get(key) // an attempt at work is recently used
	if !ok || (attempt != 0 && a.attempt != attempt) {
		return nil
	}
	return a.span
}

// End is the end of an IO span: the outcome, and an error when it failed.
type End func(outcome string, err error, attrs ...attribute.KeyValue)

func noEnd(string, error, ...attribute.KeyValue) {}

// StartChat starts the `chat` span of a model request of attempt, under
// the attempt's span.
func (t *Tracer) StartChat(ctx context.Context, key types.NamespacedName, attempt int64, provider exagentv1.ModelProvider, model string) (context.Context, End) {
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(providerName(provider))}
	if model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(model))
	}
	return t.startIO(ctx, key, attempt, strings.TrimSpace("chat "+model), trace.SpanKindClient, attrs)
}

// StartTool starts the `execute_tool` span of a tool call of attempt.
func (t *Tracer) StartTool(ctx context.Context, key types.NamespacedName, attempt int64, tool, kind, callID string) (context.Context, End) {
	return t.startIO(ctx, key, attempt, "execute_tool "+tool, trace.SpanKindInternal, []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tool), semconv.GenAIToolCallID(callID), semconv.GenAIToolType(kind)})
}

func (t *Tracer) startIO(ctx context.Context, key types.NamespacedName, attempt int64, name string, kind trace.SpanKind, attrs []attribute.KeyValue) (context.Context, End) {
	if t == nil {
		return ctx, noEnd
	}
	parent := t.span(key, attempt)
	if parent == nil {
		return ctx, noEnd
	}
	ctx, sp := t.tracer.Start(trace.ContextWithSpan(ctx, parent), name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, func(outcome string, err error, more ...attribute.KeyValue) {
		sp.SetAttributes(append(more, attrOutcome.String(outcome))...)
		if err != nil {
			sp.RecordError(err)
			sp.SetStatus(codes.Error, err.Error())
		}
		sp.End()
	}
}

func providerName(p exagentv1.ModelProvider) string {
	if p == exagentv1.ModelProviderOpenAI {
		return "openai"
	}
	return strings.ToLower(string(p))
}

// Tokens are the GenAI usage attributes of a model response.
func Tokens(prompt, completion int64) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAIUsageInputTokens(int(prompt)), semconv.GenAIUsageOutputTokens(int(completion))}
}

// Close ends the spans of attempts still open (the process stops).
func (t *Tracer) Close(now time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.attempts.Values() {
		a.span.SetAttributes(attrReason.String(reasonProcessStopped))
		a.span.End(trace.WithTimestamp(now))
	}
	t.attempts.Purge()
}
