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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Fixtures: states reached by driving the engine through its public
// transitions, so every test starts from a state the engine can produce.

const w1 = "worker-1"

var f1 = Fence{Holder: w1, Attempt: 1}

// queued is a started run.
func queued(t testing.TB, env *Env) Status { return newHarness(t, env).s }

// running is a run claimed by worker-1 (attempt 1) at t0.
func running(t testing.TB, env *Env) Status { return newHarness(t, env).claim(w1).s }

// awaitingModel has a model request of attempt 1 in flight.
func awaitingModel(t testing.TB, env *Env) Status {
	h := newHarness(t, env).claim(w1)
	h.step()
	return h.s
}

// atBatch has the model's tool calls journaled as Proposed.
func atBatch(t testing.TB, env *Env, r ModelResponse) Status {
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(r)
	return h.s
}

// inFlightRun (defaultEnv) has s1 (search) Started and p1 (pay) Pending.
func inFlightRun(t testing.TB) (*harness, Status) {
	h := newHarness(t, defaultEnv(t)).claim(w1)
	h.step()
	h.respond(tools(call("s1", "search", `{"q":"x"}`), call("p1", "pay", `{"amount":42}`)))
	h.step()
	return h, h.s
}

// paused (defaultEnv) awaits the approval of p1 at revision 1, requested at t0.
func paused(t testing.TB) (*harness, Status) {
	h, _ := inFlightRun(t)
	h.outcome("s1", ResultSucceeded, "found")
	h.step()
	if h.s.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("fixture paused: phase %s", h.s.Phase)
	}
	return h, h.s
}

// approveCmd approves the pending approval of callID in s.
func approveCmd(t testing.TB, s Status, callID, op string, who string) DecisionCmd {
	t.Helper()
	for _, a := range s.Approvals {
		if a.CallID == callID && a.State == exagentv1.ApprovalPending {
			return DecisionCmd{OperationID: op, Name: op, Decision: exagentv1.DecisionApprove, ApprovalID: a.ID,
				PayloadHash: a.PayloadHash, Revision: a.Revision, Actor: actor(who), Reason: "ok"}
		}
	}
	t.Fatalf("no pending approval for %s", callID)
	return DecisionCmd{}
}

// uncertainRun (pay allowed, activeTimeLimit Never) lost its owner after
// starting p1: the run is Uncertain at revision 1.
func uncertainRun(t testing.TB) (*harness, Status) {
	env := mustEnv(t, MakeAgent().HTTPTool("pay", false).HTTPTool("search", false).Default(exagentv1.PolicyAllow).Spec(),
		MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("p1", "pay", `{"amount":1}`), call("p2", "pay", `{"amount":2}`)))
	h.step()
	h.advance(time.Minute).recover()
	if h.s.Phase != exagentv1.PhaseUncertain {
		t.Fatalf("fixture uncertain: phase %s", h.s.Phase)
	}
	return h, h.s
}

// wantErrKind checks err against a wanted kind ("" = no error).
func wantErrKind(t testing.TB, err error, kind ErrorKind) bool {
	t.Helper()
	if kind == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return false
	}
	if !IsKind(err, kind) {
		t.Fatalf("error = %v, want kind %s", err, kind)
	}
	return true
}

// diffState compares two states; times compare by instant.
func diffState(want, got Status) string { return cmp.Diff(want, got) }
