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
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// mcpAgent is an Agent whose only tool is mcp (one server tool, or an
// import when tool is "").
func mcpAgent(srv *mcptest.Server, tool string, m func(*exagentv1.MCPTool), policy exagentv1.PolicySpec, script ...exagentv1.ScriptTurn) exagentv1.AgentSpec {
	spec := exagentv1.ToolSpec{Name: tool, MCP: &exagentv1.MCPTool{URL: srv.URL, Timeout: "20s",
		Headers: []exagentv1.SecretHeader{{Name: "Authorization",
			ValueFrom: exagentv1.SecretKeySelector{Name: "mcp-token", Key: "authorization"}}}}}
	if m != nil {
		m(spec.MCP)
	}
	return exagentv1.AgentSpec{
		Instructions: "You use the MCP server's tools.",
		Model:        fixture.Scripted(script...),
		Tools:        []exagentv1.ToolSpec{spec},
		Policy:       policy,
	}
}

func (h *harness) mcpSecret() {
	h.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mcp-token", Namespace: h.ns},
		StringData: map[string]string{"authorization": "Bearer s3cret"}}
	if err := h.c.Create(context.Background(), s); err != nil {
		h.t.Fatalf("creating the token Secret: %v", err)
	}
}

// importingAgent creates Agent name importing srv's echo and fail under
// the prefix srv_: the policy allows read-only tools and asks before any
// other; the script calls echo (c-echo), then fail (c-fail), then answers.
func (h *harness) importingAgent(name string, srv *mcptest.Server) {
	h.t.Helper()
	policy := exagentv1.PolicySpec{Default: exagentv1.PolicyAsk, Rules: []exagentv1.PolicyRule{{
		Name: "read-only", Tools: []string{"srv_*"}, Action: exagentv1.PolicyAllow, When: "tool.annotations.readOnlyHint"}}}
	h.createAgent(name, mcpAgent(srv, "srv", func(m *exagentv1.MCPTool) {
		m.Import = &exagentv1.MCPImport{Prefix: "srv_", Tools: []string{"echo", "fail"}}
	}, policy,
		fixture.CallTurn("c-echo", "srv_echo", map[string]any{"text": "hi"}),
		fixture.CallTurn("c-fail", "srv_fail", map[string]any{}),
		fixture.TextTurn("done")))
}

// callResult returns the state and result of the run's call id.
func callResult(t *testing.T, run *exagentv1.AgentRun, id string) (exagentv1.CallState, string) {
	t.Helper()
	for _, c := range run.Status.Calls {
		if c.ID == id {
			if c.Outcome == nil {
				return c.State, ""
			}
			return c.State, c.Outcome.Result
		}
	}
	t.Fatalf("run %s has no call %s: %+v", run.Name, id, run.Status.Calls)
	return "", ""
}

// TestMCPTools runs Agents whose tools are a real MCP server's (the SDK's
// own server package on 127.0.0.1): schemas and annotations from
// tools/list, the idempotency key on every call, approvals bound to the
// server's schema, unknown outcomes kept Uncertain.
func TestMCPTools(t *testing.T) {
	h := newHarness(t)
	h.mcpSecret()
	h.startManager(controllers.Options{})

	t.Run("an import: the read-only tool runs, the other asks; isError is a failed outcome the model sees", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.Start()
		defer srv.Close()
		h.importingAgent("imported", srv)
		h.createRun("imported", "imported")
		paused := h.waitPhase("imported", exagentv1.PhaseAwaitingApproval)
		if st, out := callResult(t, paused, "c-echo"); st != exagentv1.CallSucceeded || !strings.Contains(out, "echo: hi") || !strings.Contains(out, "[image image/png") {
			t.Fatalf("echo = %s %q, want Succeeded with the text and the image summarised", st, out)
		}
		if a := pendingApproval(t, paused); a.CallID != "c-fail" {
			t.Fatalf("pending approval for %s, want c-fail (not read-only)", a.CallID)
		}
		if c := paused.Status.Call("c-fail"); c == nil || c.MCP == nil || c.MCP.Server != srv.URL || c.MCP.Tool != "fail" ||
			c.MCP.ReadOnlyHint || !c.MCP.DestructiveHint {
			t.Errorf("the pending call records %+v, want the server, its name and the default hints for approvers", c.MCP)
		}
		h.approve(paused, "ok")
		done := h.waitPhase("imported", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c-fail"); st != exagentv1.CallFailed || !strings.Contains(out, "boom: the tool failed") {
			t.Errorf("fail = %s %q, want Failed with the server's text", st, out)
		}
		for _, c := range srv.Calls("") {
			want := string(done.UID) + "/c-" + c.Tool
			if c.HeaderKey != want || c.MetaKey != want || c.Authorization != "Bearer s3cret" {
				t.Errorf("%s carried key %q / _meta %q / auth %q, want %q and the Secret's token", c.Tool, c.HeaderKey, c.MetaKey, c.Authorization, want)
			}
		}
		if n := len(srv.Calls("")); n != 2 {
			t.Errorf("server saw %d calls, want 2", n)
		}
	})

	t.Run("a schema changed while the run waits re-asks; the old approval sends nothing", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.Start()
		defer srv.Close()
		h.createAgent("reschema", mcpAgent(srv, "echo", nil, fixture.AskPolicy("echo"),
			fixture.CallTurn("c1", "echo", map[string]any{"text": "hi"}), fixture.TextTurn("done")))
		h.createRun("reschema", "reschema")
		paused := h.waitPhase("reschema", exagentv1.PhaseAwaitingApproval)
		old := pendingApproval(t, paused)
		srv.SetEchoSchema(map[string]any{"type": "object", "properties": map[string]any{
			"text": map[string]any{"type": "string"}, "loud": map[string]any{"type": "boolean"}}})
		h.approve(paused, "old")
		again := h.waitRun("reschema", "a new approval at revision 2", func(r *exagentv1.AgentRun) bool {
			return r.Status.Phase == exagentv1.PhaseAwaitingApproval && r.Status.Revision == 2
		})
		if fresh := pendingApproval(t, again); fresh.PayloadHash == old.PayloadHash {
			t.Fatalf("the new approval is bound like the old one: %s", fresh.PayloadHash)
		}
		if n := len(srv.Calls("")); n != 0 {
			t.Fatalf("the old approval sent %d calls", n)
		}
		h.approve(again, "new")
		done := h.waitPhase("reschema", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "echo (new schema)" {
			t.Errorf("call = %s %q", st, out)
		}
	})

	t.Run("a tool the server removed while the run waits fails cleanly; the model is told", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.Start()
		defer srv.Close()
		h.createAgent("removed", mcpAgent(srv, "echo", nil, fixture.AskPolicy("echo"),
			fixture.CallTurn("c1", "echo", map[string]any{"text": "hi"}), fixture.TextTurn("done")))
		h.createRun("removed", "removed")
		paused := h.waitPhase("removed", exagentv1.PhaseAwaitingApproval)
		srv.MCP.RemoveTools("echo")
		h.approve(paused, "ok")
		done := h.waitPhase("removed", exagentv1.PhaseSucceeded)
		st, out := callResult(t, done, "c1")
		if st != exagentv1.CallFailed || !strings.Contains(out, "ToolUnavailable") || !strings.Contains(out, `does not offer tool "echo"`) {
			t.Errorf("call = %s %q, want Failed with ToolUnavailable", st, out)
		}
		if n := len(srv.Calls("")); n != 0 {
			t.Errorf("server saw %d calls, want none", n)
		}
	})

	t.Run("a call that hangs past its timeout ends Uncertain, never re-sent", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.Start()
		defer srv.Close()
		h.createAgent("hangs", mcpAgent(srv, "hang", func(m *exagentv1.MCPTool) { m.Timeout = "2s" },
			exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
			fixture.CallTurn("c1", "hang", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("hangs", "hangs")
		run := h.waitPhase("hangs", exagentv1.PhaseUncertain)
		if st, _ := callResult(t, run, "c1"); st != exagentv1.CallUncertain {
			t.Errorf("call = %s, want Uncertain", st)
		}
		if n := len(srv.Calls("hang")); n != 1 {
			t.Errorf("server saw %d calls, want exactly 1", n)
		}
	})

	t.Run("an idempotent tool is re-sent with the same key", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.Start()
		defer srv.Close()
		srv.SetHangFirst(1)
		h.createAgent("flaky", mcpAgent(srv, "flaky", func(m *exagentv1.MCPTool) { m.Timeout, m.Idempotent = "2s", true },
			exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
			fixture.CallTurn("c1", "flaky", map[string]any{}), fixture.TextTurn("done")))
		h.createRun("flaky", "flaky")
		done := h.waitPhase("flaky", exagentv1.PhaseSucceeded)
		if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "flaky: done" {
			t.Errorf("call = %s %q", st, out)
		}
		calls := srv.Calls("flaky")
		if len(calls) != 2 {
			t.Fatalf("server saw %d calls, want 2", len(calls))
		}
		for _, c := range calls {
			if want := string(done.UID) + "/c1"; c.HeaderKey != want || c.MetaKey != want {
				t.Errorf("key %q / _meta %q, want %q on every send", c.HeaderKey, c.MetaKey, want)
			}
		}
	})

	t.Run("an unreachable server: the run waits with MCPServerUnavailable", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.Start()
		srv.Close()
		h.createAgent("down", mcpAgent(srv, "echo", nil, exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
			fixture.CallTurn("c1", "echo", map[string]any{"text": "hi"}), fixture.TextTurn("done")))
		h.createRun("down", "down")
		h.waitRun("down", "Ready=False MCPServerUnavailable", func(r *exagentv1.AgentRun) bool {
			for _, c := range r.Status.Conditions {
				if c.Type == exagentv1.ConditionReady && c.Status == metav1.ConditionFalse && c.Reason == exagentv1.ReasonMCPServerUnavailable {
					return true
				}
			}
			return false
		})
	})
}
