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

package controllers_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func hasEvent(s sdktrace.ReadOnlySpan, name string) bool {
	for _, e := range s.Events() {
		if e.Name == name {
			return true
		}
	}
	return false
}

// TestOneTracePerRun: a run that pauses in one manager and, once
// approved, resumes and ends in another is one trace: the first attempt's
// span is its root (the traceparent journaled in the run's status), the
// resumed attempt joins it, each model request and tool call is a `chat`
// or `execute_tool` child with the GenAI attributes, the decision is an
// event, and no span is open across the human wait.
func TestOneTracePerRun(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	rec := tracetest.NewSpanRecorder()
	tracer := func() *telemetry.Tracer { return telemetry.New(telemetry.NewProvider(sdktrace.WithSpanProcessor(rec))) }

	first := h.startManager(controllers.Options{Holder: "first", Tracer: tracer()})
	h.createAgent("payments", refundAgent(ts))
	h.createRun("r1", "payments")
	paused := h.waitPhase("r1", exagentv1.PhaseAwaitingApproval)
	if paused.Status.Traceparent == "" {
		t.Fatal("the run has no traceparent")
	}
	first.stop()
	pausedAt := time.Now()

	h.startManager(controllers.Options{Holder: "second", Tracer: tracer()})
	h.approve(paused, "approve-1")
	done := h.waitPhase("r1", exagentv1.PhaseSucceeded)
	if done.Status.Traceparent != paused.Status.Traceparent {
		t.Errorf("traceparent changed from %s to %s", paused.Status.Traceparent, done.Status.Traceparent)
	}
	var spans []sdktrace.ReadOnlySpan
	if !eventually(func() bool {
		spans = rec.Ended()
		n := 0
		for _, s := range spans {
			if v, _ := attr(s, "gen_ai.operation.name"); v.AsString() == "invoke_agent" {
				n++
			}
		}
		return n >= 2
	}) {
		names := make([]string, 0, len(spans))
		for _, s := range spans {
			a, _ := attr(s, "exagent.attempt")
			names = append(names, fmt.Sprintf("%s(attempt %d)", s.Name(), a.AsInt64()))
		}
		t.Fatalf("want two ended attempt spans, have %d spans: %v", len(spans), names)
	}

	traceID := spans[0].SpanContext().TraceID()
	var attempts, chats, tools, decides []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().TraceID() != traceID {
			t.Errorf("span %q is in trace %s, want %s", s.Name(), s.SpanContext().TraceID(), traceID)
		}
		op, _ := attr(s, "gen_ai.operation.name")
		switch {
		case op.AsString() == "invoke_agent":
			attempts = append(attempts, s)
		case op.AsString() == "chat":
			chats = append(chats, s)
		case op.AsString() == "execute_tool":
			tools = append(tools, s)
		case s.Name() == "decide r1":
			decides = append(decides, s)
		}
		// No span is open across the human wait (paused → decided).
		if s.StartTime().Before(pausedAt) && s.EndTime().After(pausedAt.Add(time.Second)) && s.Name() != "decide r1" {
			t.Errorf("span %q (%s → %s) is open across the human wait", s.Name(), s.StartTime(), s.EndTime())
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("attempt spans = %d, want 2", len(attempts))
	}
	root, resumed := attempts[0], attempts[1]
	if h1, _ := attr(root, "exagent.holder"); h1.AsString() != "first" {
		root, resumed = resumed, root
	}
	if h2, _ := attr(resumed, "exagent.holder"); h2.AsString() != "second" {
		t.Errorf("the resumed attempt ran in %q, want the second manager", h2.AsString())
	}
	if root.Parent().IsValid() {
		t.Errorf("the first attempt has parent %s, want it to be the trace's root", root.Parent().SpanID())
	}
	if want := "00-" + traceID.String() + "-" + root.SpanContext().SpanID().String() + "-01"; paused.Status.Traceparent != want {
		t.Errorf("traceparent %s, want the root span's %s", paused.Status.Traceparent, want)
	}
	if resumed.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("the resumed attempt's parent is %s, want the root %s", resumed.Parent().SpanID(), root.SpanContext().SpanID())
	}
	if !hasEvent(root, "exagent.approval.requested") {
		t.Error("the pausing attempt has no exagent.approval.requested event")
	}
	if len(decides) != 1 || !hasEvent(decides[0], "exagent.approval.decided") {
		t.Errorf("want one decide span with the decision event, have %d", len(decides))
	}
	if len(chats) != 2 {
		t.Errorf("chat spans = %d, want 2 (one per model turn)", len(chats))
	}
	for _, c := range chats {
		if p, _ := attr(c, "gen_ai.provider.name"); p.AsString() != "scripted" {
			t.Errorf("chat span provider = %q", p.AsString())
		}
		if _, ok := attr(c, "gen_ai.usage.input_tokens"); !ok {
			t.Errorf("chat span %q has no token usage", c.Name())
		}
	}
	if len(tools) != 1 {
		t.Fatalf("execute_tool spans = %d, want 1", len(tools))
	}
	tool := tools[0]
	name, _ := attr(tool, "gen_ai.tool.name")
	id, _ := attr(tool, "gen_ai.tool.call.id")
	if tool.Name() != "execute_tool refund" || name.AsString() != "refund" || id.AsString() != "refund-1" {
		t.Errorf("execute_tool span %q: tool %q call %q", tool.Name(), name.AsString(), id.AsString())
	}
	if tool.Parent().SpanID() != resumed.SpanContext().SpanID() {
		t.Error("the tool call is not a child of the attempt that ran it")
	}
}

// TestTraceOfRunDeletedMidAttempt: a run deleted while this process owns
// an attempt (its tool call in flight) never gets the commit that releases
// the attempt; the reconcile that finds it gone ends the attempt's span
// (reason RunDeleted), so the tracer keeps nothing for a run that is gone.
func TestTraceOfRunDeletedMidAttempt(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		<-release
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	rec := tracetest.NewSpanRecorder()
	tracer := telemetry.New(telemetry.NewProvider(sdktrace.WithSpanProcessor(rec)))
	h.startManager(controllers.Options{Tracer: tracer})
	h.createAgent("busy", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("work", "work", map[string]any{"amount": 1}), fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("work", ts.url("/work"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	run := h.createRun("doomed", "busy")
	h.waitRun("doomed", "the call in flight", func(r *exagentv1.AgentRun) bool {
		return len(r.Status.Calls) == 1 && r.Status.Calls[0].State == exagentv1.CallStarted && len(ts.journal()) == 1
	})
	if n := tracer.Open(); n != 1 {
		t.Fatalf("open attempt spans with the call in flight = %d, want 1", n)
	}
	if err := h.c.Delete(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return tracer.Open() == 0 }) {
		t.Fatalf("open attempt spans after the run was deleted = %d, want 0", tracer.Open())
	}
	deleted := false
	for _, s := range rec.Ended() {
		if v, _ := attr(s, "exagent.reason"); s.Name() == "invoke_agent busy" && v.AsString() == "RunDeleted" {
			deleted = true
		}
	}
	if !deleted {
		t.Error("no attempt span ended with exagent.reason=RunDeleted")
	}
	free()
}
