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

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// TestMCPSamplingDenyAfterEdit: an MCP server's sampling request
// journaled under mcp.sampling Ask waits for a person; the Agent is
// edited to Deny meanwhile, then the person approves. The current Agent
// decides: no sampling request reaches the run's model, the server is not
// called again, and the call fails MCPInputRefused saying the Agent now
// denies sampling — the model reads it and the run goes on.
func TestMCPSamplingDenyAfterEdit(t *testing.T) {
	h := newHarness(t)
	h.mcpSecret()
	h.startManager(controllers.Options{})
	srv := mcptest.StartStateless()
	defer srv.Close()
	ask := func(m *exagentv1.MCPTool) { m.Sampling = exagentv1.SamplingAsk }
	h.createAgent("edited", mcpAgent(srv, "sample", ask, exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		fixture.CallTurn("c1", "sample", map[string]any{}), fixture.TextTurn("done")))
	h.createRun("edited", "edited")
	paused := h.waitPhase("edited", exagentv1.PhaseAwaitingApproval)
	qs := pendingQuestions(paused)
	if len(qs) != 1 || qs[0].Question.Source != exagentv1.QuestionMCPSampling {
		t.Fatalf("questions %+v, want the sampling request asked", qs)
	}

	ctx := context.Background()
	var a exagentv1.Agent
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "edited"}, &a); err != nil {
		t.Fatal(err)
	}
	a.Spec.Tools[0].MCP.Sampling = exagentv1.SamplingDeny
	if err := h.c.Update(ctx, &a); err != nil {
		t.Fatal(err)
	}
	h.decide(alice, h.decision("edited", "s1").Answer(qs[0], `"approve"`, ""))

	done := h.waitPhase("edited", exagentv1.PhaseSucceeded)
	if st, out := callResult(t, done, "c1"); st != exagentv1.CallFailed || !strings.Contains(out, exagentv1.ReasonMCPInputRefused) ||
		!strings.Contains(out, "now sets mcp.sampling Deny") {
		t.Fatalf("call = %s %q, want Failed MCPInputRefused saying the Agent now denies sampling", st, out)
	}
	if n := done.Status.Ledger.Requests; n != 2 {
		t.Errorf("ledger requests %d, want 2: the two turns, no sampling request", n)
	}
	if c := done.Status.Call("c1"); c.Input != nil && c.Input.Samples != "" {
		t.Errorf("samples %q journaled, want none", c.Input.Samples)
	}
	if n := len(srv.Calls("sample")); n != 1 {
		t.Errorf("the server saw %d calls, want 1: it is not called again with a completion", n)
	}
}
