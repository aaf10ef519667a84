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

package e2e

import (
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestManagerKilledWhilePaused: a paused run is held by no process. The
// manager is SIGKILLed (no cleanup, like a crashed pod); while it is gone
// no decision is admitted (the webhook fails closed); a new manager process
// picks the run up, alice approves, and the effect happens exactly once.
func TestManagerKilledWhilePaused(t *testing.T) {
	ns := namespace(t, "e2e-restart")
	bindApprovers(t, ns)
	srv := newEffectServer(t, false)
	must(t, "", httpAgent(ns, "payments", srv.URL+"/charge", "Ask", "10s")+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	must(t, "alice", "", "approve", "wait", "pay", "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	if paused := getRun(t, ns, "pay"); paused.Status.Claim != nil {
		t.Errorf("a paused run still has a claim: %+v", paused.Status.Claim)
	}

	s.manager.Kill()

	stderr := mustFail(t, "alice", "approve", "pay", "-n", ns, "--wait=false")
	if !strings.Contains(stderr, "failed calling webhook") || strings.HasPrefix(stderr, "panic") {
		t.Errorf("approving with the manager down: %q", stderr)
	}
	if n := len(decisions(t, ns)); n != 0 {
		t.Errorf("%d decisions stored while the webhook was down", n)
	}
	if got := getRun(t, ns, "pay"); got.Status.Phase != exagentv1.PhaseAwaitingApproval || len(srv.requests()) != 0 {
		t.Fatalf("with no manager the run is %s and the endpoint saw %d requests", got.Status.Phase, len(srv.requests()))
	}

	if err := s.startManager(); err != nil {
		t.Fatalf("starting a new manager: %v", err)
	}
	out := must(t, "alice", "", "approve", "pay", "-n", ns, "--reason", "after the restart")
	if !strings.Contains(out, " approved by alice ") {
		t.Errorf("approve printed %q", out)
	}
	must(t, "alice", "", "approve", "wait", "pay", "-n", ns, "--for=done", "--timeout="+waitTimeout)

	final := getRun(t, ns, "pay")
	if final.Status.Phase != exagentv1.PhaseSucceeded {
		t.Errorf("run is %s, want Succeeded", final.Status.Phase)
	}
	reqs := srv.requests()
	if len(final.Status.Calls) != 1 || len(reqs) != 1 {
		t.Fatalf("want one journaled call and one request, got %d calls and %d requests", len(final.Status.Calls), len(reqs))
	}
	call := final.Status.Calls[0]
	if call.State != exagentv1.CallSucceeded || call.Outcome == nil || !call.Outcome.Succeeded {
		t.Errorf("the call is %s with outcome %+v", call.State, call.Outcome)
	}
	if call.IdempotencyKey == "" || reqs[0] != call.IdempotencyKey {
		t.Errorf("the request carried Idempotency-Key %q, the journal %q", reqs[0], call.IdempotencyKey)
	}
	if final.Status.Ledger.ToolCalls != 1 {
		t.Errorf("ledger.toolCalls = %d, want 1", final.Status.Ledger.ToolCalls)
	}
}
