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
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// agentChecks counts the Agent controller's checks per Agent, and those
// that wrote (Hooks.AgentChecked).
type agentChecks struct {
	mu            sync.Mutex
	checks, wrote map[types.NamespacedName]int
}

func newAgentChecks() *agentChecks {
	return &agentChecks{checks: map[types.NamespacedName]int{}, wrote: map[types.NamespacedName]int{}}
}

func (c *agentChecks) hook(agent types.NamespacedName, wrote bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks[agent]++
	if wrote {
		c.wrote[agent]++
	}
}

func (c *agentChecks) count(agent types.NamespacedName) (checks, wrote int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks[agent], c.wrote[agent]
}

// waitAgent polls the Agent until cond holds on a status of its current
// generation, or the deadline passes.
func (h *harness) waitAgent(name, what string, cond func(*exagentv1.Agent, *metav1.Condition) bool) *exagentv1.Agent {
	h.t.Helper()
	var last exagentv1.Agent
	if eventually(func() bool {
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &last); err != nil {
			return false
		}
		ready := meta.FindStatusCondition(last.Status.Conditions, exagentv1.ConditionReady)
		return ready != nil && last.Status.ObservedGeneration == last.Generation &&
			ready.ObservedGeneration == last.Generation && cond(&last, ready)
	}) {
		return &last
	}
	h.t.Fatalf("agent %s: timed out waiting for %s; generation %d, status %+v", name, what, last.Generation, last.Status)
	return nil
}

// waitAgentReady waits for Ready with the given status and reason.
func (h *harness) waitAgentReady(name string, status metav1.ConditionStatus, reason string) *exagentv1.Agent {
	h.t.Helper()
	return h.waitAgent(name, "Ready="+string(status)+" "+reason, func(_ *exagentv1.Agent, c *metav1.Condition) bool {
		return c.Status == status && c.Reason == reason
	})
}

// toolStatus returns the status of the Agent's tool name.
func toolStatus(t *testing.T, a *exagentv1.Agent, name string) exagentv1.AgentToolStatus {
	t.Helper()
	for _, s := range a.Status.Tools {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("agent %s has no status for tool %s: %+v", a.Name, name, a.Status.Tools)
	return exagentv1.AgentToolStatus{}
}

func (h *harness) putSecret(name string, data map[string]string) {
	h.t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}
	err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: name}, s)
	s.Data = nil
	s.StringData = data
	if err == nil {
		err = h.c.Update(ctx, s)
	} else {
		err = h.c.Create(ctx, s)
	}
	if err != nil {
		h.t.Fatalf("writing Secret %s: %v", name, err)
	}
}

// withTools is an Agent of a one-turn script and tools.
func withTools(tools ...exagentv1.ToolSpec) exagentv1.AgentSpec {
	return exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("done")), Tools: tools}
}

// TestAgentReady: the Agent controller says whether an Agent works, for
// each cause a user can meet — a Secret (or its key) missing for a
// header, the model or a sink, an MCP server down or no longer offering
// a tool, a schema the validator refuses, a policy that does not compile,
// a delegate missing, more Secrets than a check reads — with the cause's
// reason on Ready and on the tool, and fixing the cause makes the Agent
// Ready again: a spec fix at once, a Secret or a server on the recheck
// (1 s here; an Agent not Ready is rechecked with backoff up to it), a
// delegate when it is created. A run that cannot go on names the Agent's
// failing condition. Nothing is written while nothing changes.
func TestAgentReady(t *testing.T) {
	h := newHarness(t)
	checks := newAgentChecks()
	m := h.startManager(controllers.Options{AgentRecheckInterval: time.Second, Hooks: controllers.Hooks{AgentChecked: checks.hook}})
	hook := newToolServer(t)

	t.Run("a header's Secret key missing, then added", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		h.putSecret("hook", map[string]string{"other": "x"})
		tool := fixture.HTTPTool("notify", hook.url("/notify"))
		tool.HTTP.Headers = []exagentv1.SecretHeader{{Name: "Authorization", ValueFrom: exagentv1.SecretKeySelector{Name: "hook", Key: "token"}}}
		h.createAgent("hooked", withTools(tool, fixture.HTTPTool("plain", hook.url("/plain"))))
		a := h.waitAgentReady("hooked", metav1.ConditionFalse, exagentv1.ReasonSecretKeyNotFound)
		if st := toolStatus(t, a, "notify"); st.Ready || st.Kind != "http" || st.Reason != exagentv1.ReasonSecretKeyNotFound ||
			!strings.Contains(st.Message, `header Authorization: Secret "hook"`) || !strings.Contains(st.Message, `no key "token"`) {
			t.Errorf("tool notify: %+v, want not ready, SecretKeyNotFound naming the header, Secret and key", st)
		}
		if st := toolStatus(t, a, "plain"); !st.Ready || st.Reason != "" {
			t.Errorf("tool plain: %+v, want ready", st)
		}
		if c := meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Stalled = %+v, want True (kstatus: Failed)", c)
		}
		h.putSecret("hook", map[string]string{"token": "Bearer t"})
		a = h.waitAgentReady("hooked", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
		if st := toolStatus(t, a, "notify"); !st.Ready {
			t.Errorf("tool notify after the fix: %+v", st)
		}
	})

	t.Run("the model's Secret missing: the run's message names the Agent's condition; created, Ready", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		model := newToolServer(t) // never reached: the key is read first
		h.createAgent("keyless", exagentv1.AgentSpec{Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m",
			BaseURL: model.url("/v1"), APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "openai", Key: "apiKey"}}})
		a := h.waitAgentReady("keyless", metav1.ConditionFalse, exagentv1.ReasonSecretNotFound)
		if c := meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionReady); !strings.Contains(c.Message, `model (apiKeySecretRef): Secret "openai" does not exist`) {
			t.Errorf("Ready message %q, want it to name the model's Secret", c.Message)
		}
		// The run reads its Agent from the manager's cache: wait until
		// that has the check too (a run created with its Agent may well
		// fail before the Agent's first check, and then says less).
		if !eventually(func() bool {
			var cached exagentv1.Agent
			err := m.ctrls.Runs.Client.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "keyless"}, &cached)
			return err == nil && meta.IsStatusConditionFalse(cached.Status.Conditions, exagentv1.ConditionReady)
		}) {
			t.Fatal("the manager's cache never saw the Agent's check")
		}
		h.createRun("keyless", "keyless")
		run := h.waitPhase("keyless", exagentv1.PhaseFailed)
		// Failed at the first request, before any IO, naming the field
		// and the Agent's failing condition.
		if run.Status.Reason != exagentv1.ReasonSecretNotFound || !strings.Contains(run.Status.Message, `spec.model.apiKeySecretRef: the Secret "openai" does not exist`) ||
			!strings.Contains(run.Status.Message, `Agent "keyless" is not Ready (SecretNotFound): model (apiKeySecretRef): Secret "openai"`) || run.Status.Ledger.Requests != 1 {
			t.Errorf("run ended %s %q after %d requests, want SecretNotFound at the first, naming the field and the Agent's failing condition",
				run.Status.Reason, run.Status.Message, run.Status.Ledger.Requests)
		}
		if n := len(model.journal()); n != 0 {
			t.Errorf("the model endpoint saw %d requests, want none", n)
		}
		h.putSecret("openai", map[string]string{"apiKey": "sk-test"})
		h.waitAgentReady("keyless", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
	})

	t.Run("a notification sink's signing Secret missing, then created", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		spec := withTools(exagentv1.ToolSpec{Name: "look", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinGet, Kinds: []string{"ConfigMap"}}})
		spec.Notify = []exagentv1.NotifySink{{Name: "ops", URL: hook.url("/sink"), SigningSecretRef: &exagentv1.SecretKeySelector{Name: "sink-key", Key: "key"}}}
		h.createAgent("told", spec)
		a := h.waitAgentReady("told", metav1.ConditionFalse, exagentv1.ReasonSecretNotFound)
		if c := meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionReady); !strings.Contains(c.Message, `notify sink "ops" (signingSecretRef): Secret "sink-key"`) {
			t.Errorf("Ready message %q, want it to name the sink and its Secret", c.Message)
		}
		if st := toolStatus(t, a, "look"); !st.Ready || st.Kind != "builtin" {
			t.Errorf("tool look: %+v, want a ready builtin (the sink is not a tool)", st)
		}
		h.putSecret("sink-key", map[string]string{"key": "whsec_c2VjcmV0"})
		h.waitAgentReady("told", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
	})

	t.Run("an MCP header's Secret missing: the waiting run names the Agent's condition; created, both go on", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		srv := mcptest.Start()
		defer srv.Close()
		spec := mcpAgent(srv, "echo", func(m *exagentv1.MCPTool) { m.Headers[0].ValueFrom.Name = "late-token" },
			exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}, fixture.CallTurn("c1", "echo", map[string]any{"text": "hi"}), fixture.TextTurn("done"))
		h.createAgent("late", spec)
		h.waitAgentReady("late", metav1.ConditionFalse, exagentv1.ReasonSecretNotFound)
		h.createRun("late", "late")
		h.waitRun("late", "Ready=False MCPServerUnavailable naming the Agent's SecretNotFound", func(r *exagentv1.AgentRun) bool {
			c := readyCondition(r)
			return c != nil && c.Reason == exagentv1.ReasonMCPServerUnavailable &&
				strings.Contains(c.Message, `Agent "late" is not Ready (SecretNotFound): tool "echo": header Authorization: Secret "late-token"`)
		})
		h.putSecret("late-token", map[string]string{"authorization": "Bearer s3cret"})
		h.waitAgentReady("late", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
		h.waitPhase("late", exagentv1.PhaseSucceeded)
	})

	t.Run("an MCP server down, then up", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		h.mcpSecret()
		srv := mcptest.Start()
		defer srv.Close()
		srv.SetDown(true)
		h.createAgent("mcp", mcpAgent(srv, "echo", nil, exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}, fixture.TextTurn("done")))
		a := h.waitAgentReady("mcp", metav1.ConditionFalse, exagentv1.ReasonMCPServerUnavailable)
		if st := toolStatus(t, a, "echo"); st.Ready || st.Kind != "mcp" || st.Reason != exagentv1.ReasonMCPServerUnavailable || !strings.Contains(st.Message, srv.URL) {
			t.Errorf("tool echo: %+v, want MCPServerUnavailable naming the server", st)
		}
		srv.SetDown(false)
		h.waitAgentReady("mcp", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
		srv.MCP.RemoveTools("echo") // a listing read on the recheck no longer offers it
		a = h.waitAgentReady("mcp", metav1.ConditionFalse, exagentv1.ReasonMCPToolNotFound)
		if st := toolStatus(t, a, "echo"); !strings.Contains(st.Message, `does not offer "echo"`) {
			t.Errorf("tool echo: %+v, want MCPToolNotFound naming the tool", st)
		}
	})

	t.Run("a schema the validator refuses, then fixed", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		tool := fixture.HTTPTool("pay", hook.url("/pay"))
		// No webhook in this envtest: the CRD alone admits it, as a bypassed webhook would.
		tool.Parameters = fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string", "pattern": "(["}}})
		a := h.createAgent("schema", withTools(tool))
		got := h.waitAgentReady("schema", metav1.ConditionFalse, exagentv1.ReasonInvalidSchema)
		if st := toolStatus(t, got, "pay"); st.Reason != exagentv1.ReasonInvalidSchema || !strings.Contains(st.Message, "parameters:") || !strings.Contains(st.Message, "pattern") {
			t.Errorf("tool pay: %+v, want InvalidSchema with the validator's finding", st)
		}
		got.Spec.Tools[0].Parameters = fixture.RawJSON(`{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z]+$"}}}`)
		if err := h.c.Update(context.Background(), got); err != nil {
			t.Fatal(err)
		}
		fixed := h.waitAgentReady("schema", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
		if fixed.Status.ObservedGeneration != a.Generation+1 {
			t.Errorf("observedGeneration %d, want %d", fixed.Status.ObservedGeneration, a.Generation+1)
		}
	})

	t.Run("a policy rule that does not compile", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		spec := withTools(fixture.HTTPTool("pay", hook.url("/pay")))
		spec.Policy = exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{{Name: "broken", Tools: []string{"*"}, Action: exagentv1.PolicyAllow, When: "args.("}}}
		a := h.waitAgentReady(h.createAgent("badpolicy", spec).Name, metav1.ConditionFalse, exagentv1.ReasonInvalidConfiguration)
		if c := meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionReady); !strings.HasPrefix(c.Message, "spec: policy.rules[0].when: ") || !strings.Contains(c.Message, "Syntax error") {
			t.Errorf("Ready message %q, want the policy's compile error", c.Message)
		}
		if st := toolStatus(t, a, "pay"); !st.Ready {
			t.Errorf("tool pay: %+v, want ready (the policy is not the tool's)", st)
		}
	})

	t.Run("a delegate missing, then created", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		h.createAgent("parent", withTools(fixture.AgentTool("ask-child", "child")))
		a := h.waitAgentReady("parent", metav1.ConditionFalse, exagentv1.ReasonDelegateNotFound)
		if st := toolStatus(t, a, "ask-child"); st.Kind != "agent" || st.Reason != exagentv1.ReasonDelegateNotFound || !strings.Contains(st.Message, `Agent "child"`) {
			t.Errorf("tool ask-child: %+v, want DelegateNotFound naming the Agent", st)
		}
		h.createAgent("child", withTools())
		h.waitAgentReady("parent", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
	})

	t.Run("more distinct Secrets than one check reads: the rest are TooManySecrets", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		var ts []exagentv1.ToolSpec
		for i := range exagentv1.MaxAgentSecretReads + 1 {
			tool := fixture.HTTPTool(fmt.Sprintf("t%d", i), hook.url("/t"))
			tool.HTTP.Headers = []exagentv1.SecretHeader{{Name: "X-Key", ValueFrom: exagentv1.SecretKeySelector{Name: fmt.Sprintf("s%d", i), Key: "k"}}}
			ts = append(ts, tool)
		}
		a := h.waitAgentReady(h.createAgent("hoarder", withTools(ts...)).Name, metav1.ConditionFalse, exagentv1.ReasonSecretNotFound)
		last := fmt.Sprintf("t%d", exagentv1.MaxAgentSecretReads)
		if st := toolStatus(t, a, last); st.Reason != exagentv1.ReasonTooManySecrets {
			t.Errorf("tool %s: %+v, want TooManySecrets (not read)", last, st)
		}
		if st := toolStatus(t, a, "t0"); st.Reason != exagentv1.ReasonSecretNotFound {
			t.Errorf("tool t0: %+v, want SecretNotFound", st)
		}
	})

	t.Run("a Ready Agent rechecked on the period is not written again", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		h.createAgent("steady", withTools(fixture.HTTPTool("plain", hook.url("/plain"))))
		a := h.waitAgentReady("steady", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
		key := types.NamespacedName{Namespace: h.ns, Name: "steady"}
		// The hook runs once the write has returned: the test may see the
		// written status first.
		if !eventually(func() bool { _, w := checks.count(key); return w >= 1 }) {
			t.Fatal("the write of Ready was never counted")
		}
		checked, wrote := checks.count(key)
		if !eventually(func() bool { c, _ := checks.count(key); return c >= checked+3 }) {
			t.Fatalf("fewer than 3 rechecks after Ready")
		}
		if _, w := checks.count(key); w != wrote {
			t.Errorf("%d writes during the rechecks, want none", w-wrote)
		}
		var now exagentv1.Agent
		if err := h.c.Get(context.Background(), key, &now); err != nil {
			t.Fatal(err)
		}
		if now.ResourceVersion != a.ResourceVersion {
			t.Errorf("resourceVersion %s, was %s: the rechecks wrote", now.ResourceVersion, a.ResourceVersion)
		}
	})
}

// TestAgentReadyHangingServer: an MCP server that accepts connections and
// never answers leaves its Agent Ready=Unknown (Checking) while the first
// listing is under way — off the workers, so the namespace's other Agents
// are checked meanwhile — then, past the listing timeout,
// MCPServerUnavailable with "no answer".
func TestAgentReadyHangingServer(t *testing.T) {
	h := newHarness(t)
	h.mcpSecret()
	h.startManager(controllers.Options{AgentRecheckInterval: time.Minute, MCPListTimeout: 3 * time.Second})
	hang := mcptest.StartHang()
	defer hang.Close()
	h.createAgent("hangs", mcpAgent(&mcptest.Server{URL: hang.URL}, "echo", nil, exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}, fixture.TextTurn("done")))
	a := h.waitAgentReady("hangs", metav1.ConditionUnknown, exagentv1.ReasonChecking)
	if c := meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionReconciling); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Reconciling = %+v, want True while checking (kstatus: InProgress)", c)
	}
	if st := toolStatus(t, a, "echo"); st.Ready || st.Reason != exagentv1.ReasonChecking || !strings.Contains(st.Message, hang.URL) {
		t.Errorf("tool echo while checking: %+v, want not ready, Checking, naming the server", st)
	}
	h.createAgent("plain", withTools(fixture.HTTPTool("plain", "http://127.0.0.1:1/plain")))
	h.waitAgentReady("plain", metav1.ConditionTrue, exagentv1.ReasonAgentReady)
	a = h.waitAgentReady("hangs", metav1.ConditionFalse, exagentv1.ReasonMCPServerUnavailable)
	if st := toolStatus(t, a, "echo"); !strings.Contains(st.Message, "no answer within 3s") {
		t.Errorf("tool echo: %+v, want the listing timeout named", st)
	}
}
