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
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// continueEnv is defaultEnv with policy onExpire Continue.
func continueEnv(t testing.TB) *Env {
	return mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").OnExpire(exagentv1.OnExpireContinue).Spec(), MakeRun().Spec())
}

// TestExpireContinue: with onExpire Continue an approval nobody decided in
// time does not end the run: its call is Refused without running, the
// model's next request carries a result saying nobody approved it in time,
// and a decision that comes after the expiry is still rejected.
func TestExpireContinue(t *testing.T) {
	env := continueEnv(t)
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("s1", "search", `{"q":"x"}`), call("p1", "pay", `{"amount":42}`)))
	h.step()
	h.outcome("s1", ResultSucceeded, "found")
	h.step()
	if h.s.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("phase %s, want AwaitingApproval", h.s.Phase)
	}
	awaiting := h.s
	late := approveCmd(t, awaiting, "p1", "op-late", "alice")

	if _, changed, err := Expire(awaiting, env, t0.Add(24*time.Hour-time.Second)); err != nil || changed {
		t.Fatalf("before the expiry: changed %v, %v", changed, err)
	}
	got, changed, err := Expire(awaiting, env, t0.Add(24*time.Hour))
	if err != nil || !changed {
		t.Fatalf("at the expiry: changed %v, %v", changed, err)
	}
	if got.Phase != exagentv1.PhaseApproved || got.PendingApprovals != 0 {
		t.Errorf("phase %s pending %d, want Approved and none pending (the run goes on)", got.Phase, got.PendingApprovals)
	}
	if a := got.Approvals[0]; a.State != exagentv1.ApprovalExpired {
		t.Errorf("approval %s is %s, want Expired", a.ID, a.State)
	}
	p1 := got.Calls[findCall(&got, "p1")]
	if p1.State != exagentv1.CallRefused || p1.Outcome == nil || !strings.Contains(p1.Outcome.Result, "Nobody approved the call in time") {
		t.Errorf("p1 = %s %+v, want Refused with a result telling the model nobody approved it in time", p1.State, p1.Outcome)
	}
	if _, _, err := Approve(got, env, late, t0.Add(24*time.Hour)); !IsKind(err, KindExpired) {
		t.Errorf("an approval after the expiry: %v, want KindExpired", err)
	}

	h.s, h.now = got, t0.Add(24*time.Hour)
	h.claim("worker-2")
	act := h.step()
	if act.Kind != ActCallModel {
		t.Fatalf("after the expiry the worker does %s, want a model request", describe(act))
	}
	var told bool
	for _, m := range act.Model.Messages {
		if m.ToolCallID == "p1" && strings.Contains(m.Content, "Nobody approved the call in time") {
			told = true
		}
	}
	if !told {
		t.Errorf("the model's request does not tell it p1 was not approved in time: %+v", act.Model.Messages)
	}
}

// TestExpireStopIsTheDefault: an unset onExpire and Stop are the same
// policy, with the same fingerprint as before the field existed (a run
// paused under it does not ask again); Continue is another policy.
func TestExpireStopIsTheDefault(t *testing.T) {
	unset := defaultEnv(t)
	stop := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).
		Rule("search-ok", exagentv1.PolicyAllow, "", "search").OnExpire(exagentv1.OnExpireStop).Spec(), MakeRun().Spec())
	if unset.Binding().Policy != stop.Binding().Policy {
		t.Errorf("unset and Stop fingerprint differently: %s vs %s", unset.Binding().Policy, stop.Binding().Policy)
	}
	if cont := continueEnv(t); cont.Binding().Policy == unset.Binding().Policy {
		t.Error("Continue fingerprints as Stop: changing it while a run waits would not ask again")
	}
	_, awaiting := paused(t)
	got, _, err := Expire(awaiting, stop, t0.Add(24*time.Hour))
	if err != nil || got.Phase != exagentv1.PhaseExpired || got.Reason != exagentv1.ReasonApprovalExpired {
		t.Errorf("Stop: phase %s reason %s (%v), want Expired ApprovalExpired", got.Phase, got.Reason, err)
	}
}
