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

package app

import (
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

var allPhases = []exagentv1.RunPhase{"", exagentv1.PhaseQueued, exagentv1.PhaseRunning, exagentv1.PhaseAwaitingApproval,
	exagentv1.PhaseApproved, exagentv1.PhaseSucceeded, exagentv1.PhaseFailed, exagentv1.PhaseDenied,
	exagentv1.PhaseCancelled, exagentv1.PhaseExpired, exagentv1.PhaseUncertain}

// TestSelectorsAgreeWithFilters: what completion asks the apiserver for
// never leaves out a run its own filter would offer — the selector only
// narrows the read — and the fallback filter (runFields) matches as the
// apiserver does.
func TestSelectorsAgreeWithFilters(t *testing.T) {
	filters := map[string]runFilter{"pending": pendingRuns, "live": liveRuns, "uncertain": uncertainRuns, "any": anyRun}
	runs := map[string]*exagentv1.AgentRun{}
	for _, p := range allPhases {
		b := makeRun("r", "ns").Phase(p)
		runs[string(p)+"/plain"] = b.Obj()
		runs[string(p)+"/pending"] = makeRun("r", "ns").Phase(p).Call(call("c1", "t", "{}", exagentv1.CallPending)).
			Approval(approval("a1", "c1", 0, exagentv1.ApprovalPending, 0, 0)).Obj()
		runs[string(p)+"/uncertain"] = makeRun("r", "ns").Phase(p).Call(call("c1", "t", "{}", exagentv1.CallUncertain)).Obj()
	}
	for name, f := range filters {
		for key, r := range runs {
			if f.selector == nil {
				continue
			}
			if f.keep(r) && !f.selector().Matches(runFields(r)) {
				// Only a state the engine never writes may be left out:
				// pending approvals outside AwaitingApproval, an Uncertain
				// call in a Succeeded run.
				if (name == "pending" && r.Status.Phase != exagentv1.PhaseAwaitingApproval) ||
					(name == "uncertain" && r.Status.Phase == exagentv1.PhaseSucceeded) {
					continue
				}
				t.Errorf("%s: run %s is kept but its selector %s leaves it out", name, key, f.selector())
			}
		}
	}
	if got := withAgent(awaitingApproval(), "pay").String(); got != "spec.agentRef.name=pay,status.phase=AwaitingApproval" &&
		got != "status.phase=AwaitingApproval,spec.agentRef.name=pay" {
		t.Errorf("withAgent = %q", got)
	}
	r := makeRun("r", "ns").Phase(exagentv1.PhaseAwaitingApproval).Obj()
	r.Spec.AgentRef.Name = "pay"
	if !withAgent(awaitingApproval(), "pay").Matches(runFields(r)) || withAgent(awaitingApproval(), "ops").Matches(runFields(r)) {
		t.Error("the fallback filter does not select by agent")
	}
	if !notEnded().Matches(runFields(makeRun("r", "ns").Obj())) {
		t.Error("a run no controller has started (empty phase) must count as not ended")
	}
}
