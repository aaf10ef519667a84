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
	"net/http"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/anthropictest"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestAnthropicParallelToolUse runs the Anthropic provider through the
// controller against our Messages server: one turn asks for two tools at
// once (tool_use ids become call ids), the allowed one runs and the run
// pauses once for the other; after the approval both results go back in
// one user message (the server refuses anything else), and the ledger
// holds the usage with its cache parts as the server billed them.
func TestAnthropicParallelToolUse(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	ts.respond = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		_, _ = w.Write([]byte(`{"ok":"` + r.URL.Path + `"}`))
	}
	srv := anthropictest.Start(func(r *anthropictest.Request) anthropictest.Reply {
		last := r.Messages[len(r.Messages)-1]
		if b := last.Content[len(last.Content)-1]; b.Type == "tool_result" {
			return anthropictest.Reply{Text: "refunded after looking it up"}
		}
		return anthropictest.Reply{ToolUses: []anthropictest.ToolUse{
			{ID: "toolu_look", Name: "lookup", Input: map[string]any{"order": 7}},
			{ID: "toolu_refund", Name: "refund", Input: map[string]any{"amount": 7}},
		}}
	})
	t.Cleanup(srv.Close)
	h.startManager(controllers.Options{})
	h.putSecret("anthropic", map[string]string{"apiKey": "sk-ant-test"})
	policy := fixture.AskPolicy("refund")
	policy.Default = exagentv1.PolicyAllow
	h.createAgent("claude", exagentv1.AgentSpec{
		Instructions: "You refund customers after looking their order up.",
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderAnthropic, Name: "claude-test", BaseURL: srv.URL,
			APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "anthropic", Key: "apiKey"}},
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("lookup", ts.url("/lookup")), fixture.HTTPTool("refund", ts.url("/refund"))},
		Policy: policy,
	})
	h.createRun("r", "claude")
	paused := h.waitPhase("r", exagentv1.PhaseAwaitingApproval)
	if n := len(paused.Status.Approvals); n != 1 || paused.Status.Approvals[0].CallID != "toolu_refund" {
		t.Fatalf("approvals %+v, want one, for toolu_refund", paused.Status.Approvals)
	}
	if got := ts.journal(); len(got) != 1 || got[0].Call != "toolu_look" {
		t.Fatalf("tool journal %+v, want the allowed lookup only, keyed by its tool_use id", got)
	}
	h.approve(paused, "ok")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if done.Status.Output != "refunded after looking it up" {
		t.Errorf("output %q", done.Status.Output)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	if reqs[0].System != "You refund customers after looking their order up." || reqs[0].MaxTokens != 4096 {
		t.Errorf("system %q max_tokens %d, want the instructions and the default", reqs[0].System, reqs[0].MaxTokens)
	}
	var want exagentv1.Ledger
	for _, r := range reqs {
		u := r.Usage
		want.PromptTokens += u.Input + u.CacheCreation + u.CacheRead
		want.CompletionTokens += u.Output
		want.CacheCreationTokens += u.CacheCreation
		want.CacheReadTokens += u.CacheRead
	}
	l := done.Status.Ledger
	if l.Requests != 2 || l.PromptTokens != want.PromptTokens || l.CompletionTokens != want.CompletionTokens ||
		l.CacheCreationTokens != want.CacheCreationTokens || l.CacheReadTokens != want.CacheReadTokens {
		t.Errorf("ledger %+v, want the server's bill %+v", l, want)
	}
}

// TestAnthropicStopReasons: an answer cut at max_tokens, or a refusal,
// ends the run at once with its own reason — no tool runs on half an
// answer, and the request is not sent again.
func TestAnthropicStopReasons(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	for reason, stop := range map[string]string{exagentv1.ReasonModelMaxTokens: "max_tokens", exagentv1.ReasonModelRefused: "refusal"} {
		t.Run(stop, func(t *testing.T) {
			h := &harness{t: t, ns: h.ns, c: h.c}
			ts := newToolServer(t)
			srv := anthropictest.Start(func(*anthropictest.Request) anthropictest.Reply {
				return anthropictest.Reply{Text: "I will refu", ToolUses: []anthropictest.ToolUse{{ID: "toolu_1", Name: "refund", Input: map[string]any{}}}, StopReason: stop}
			})
			t.Cleanup(srv.Close)
			name := "stop-" + strings.ReplaceAll(stop, "_", "-")
			h.createAgent(name, exagentv1.AgentSpec{
				Model:  exagentv1.ModelSpec{Provider: exagentv1.ModelProviderAnthropic, Name: "claude-test", BaseURL: srv.URL},
				Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
				Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
			})
			h.createRun(name, name)
			run := h.waitPhase(name, exagentv1.PhaseFailed)
			if run.Status.Reason != reason || run.Status.Ledger.Requests != 1 || len(ts.journal()) != 0 {
				t.Errorf("ended %s %q after %d requests and %d tool calls; want %s after 1 and none",
					run.Status.Reason, run.Status.Message, run.Status.Ledger.Requests, len(ts.journal()), reason)
			}
		})
	}
}
