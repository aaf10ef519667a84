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

package chaos

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// The checker is judged on hand-made histories: a correct one passes, and
// each bad one is caught by the rule it breaks.

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const uid = types.UID("u-1")

var key = types.NamespacedName{Namespace: "ns", Name: "r"}

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func mt(ms int) metav1.MicroTime { return metav1.NewMicroTime(at(ms)) }

func mtp(ms int) *metav1.MicroTime { m := mt(ms); return &m }

// hist builds one run's versions, each a copy of the last with a change.
type hist struct {
	vs []Version
	rv int64
}

func (h *hist) write(change func(st *exagentv1.AgentRunStatus)) *hist {
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, UID: uid}}
	if n := len(h.vs); n > 0 {
		run = h.vs[n-1].Run.DeepCopy()
	}
	change(&run.Status)
	h.rv += 10
	run.ResourceVersion = ""
	h.vs = append(h.vs, Version{RV: h.rv, Seen: at(int(h.rv)), Run: run})
	return h
}

// truncate keeps the first n versions; the next write follows them.
func (h *hist) truncate(n int) {
	h.vs = h.vs[:n]
	h.rv = h.vs[n-1].RV
}

func claim(attempt int64, leaseMs int) *exagentv1.Claim {
	return &exagentv1.Claim{Holder: "m" + string(rune('0'+attempt)), Attempt: attempt, LeaseExpiresAt: mt(leaseMs)}
}

// goodRun: claimed by attempt 1, a model request, a tool call confirmed,
// a second model request, Succeeded. Versions rv 10..60.
func goodRun() *hist {
	h := &hist{}
	h.write(func(st *exagentv1.AgentRunStatus) { st.Phase = exagentv1.PhaseQueued }) // rv 10
	h.write(func(st *exagentv1.AgentRunStatus) {                                     // rv 20: claim + model intent
		st.Phase, st.Attempts, st.Claim = exagentv1.PhaseRunning, 1, claim(1, 5000)
		st.Cursor = exagentv1.Cursor{Step: 0, Stage: exagentv1.StageRequest, ModelRequest: &exagentv1.ModelRequestIntent{Attempt: 1, Request: 1}}
	})
	h.write(func(st *exagentv1.AgentRunStatus) { // rv 30: response + tool intent
		st.Cursor = exagentv1.Cursor{Step: 0, Stage: exagentv1.StageBatch}
		st.Calls = []exagentv1.ToolCall{{ID: "c1", Tool: "charge", State: exagentv1.CallStarted, Attempt: 1,
			IdempotencyKey: "u-1/c1", StartedAt: mtp(100)}}
	})
	h.write(func(st *exagentv1.AgentRunStatus) { // rv 40: outcome + next model intent
		st.Calls[0].State = exagentv1.CallSucceeded
		st.Calls[0].Outcome = &exagentv1.CallOutcome{Succeeded: true, Result: "ok"}
		st.Cursor = exagentv1.Cursor{Step: 1, Stage: exagentv1.StageRequest, ModelRequest: &exagentv1.ModelRequestIntent{Attempt: 1, Request: 2}}
	})
	h.write(func(st *exagentv1.AgentRunStatus) { // rv 50: answered
		st.Cursor = exagentv1.Cursor{Step: 1, Stage: exagentv1.StageFinish}
	})
	h.write(func(st *exagentv1.AgentRunStatus) { // rv 60: done
		st.Phase, st.Claim = exagentv1.PhaseSucceeded, nil
	})
	return h
}

func goodRequests() []Request {
	return []Request{
		{Kind: KindModel, Server: "model", Run: key, RunUID: uid, Step: 0, At: at(50), StoreRV: 20},
		{Kind: KindHTTP, Server: "/charge", Run: key, RunUID: uid, CallID: "c1", Key: "u-1/c1", Applied: true, At: at(150), StoreRV: 30},
		{Kind: KindModel, Server: "model", Run: key, RunUID: uid, Step: 1, At: at(250), StoreRV: 40},
	}
}

func history(h *hist, reqs []Request, decisions ...Decision) History {
	return History{Runs: map[types.UID][]Version{uid: h.vs}, Requests: reqs, Decisions: decisions,
		Deciders: map[string]bool{"alice": true}}
}

func TestCheckAcceptsACorrectHistory(t *testing.T) {
	if v := Check(history(goodRun(), goodRequests())); len(v) != 0 {
		t.Fatalf("violations in a correct history:\n%s", joinViolations(v))
	}
}

func TestCheckCatchesEachViolation(t *testing.T) {
	tests := map[string]struct {
		build     func() History
		wantRule  string
		wantInMsg string
	}{
		"a tool called before its intent was committed": {
			build: func() History {
				reqs := goodRequests()
				reqs[1].StoreRV = 20 // the server's read saw only the claim
				return history(goodRun(), reqs)
			},
			wantRule: RuleIntentBeforeIO, wantInMsg: "no version at or before rv 20 records call c1 Started",
		},
		"a tool called that the journal never had": {
			build: func() History {
				reqs := append(goodRequests(), Request{Kind: KindHTTP, Server: "/charge", Run: key, RunUID: uid,
					CallID: "ghost", Key: "u-1/ghost", Applied: true, At: at(300), StoreRV: 60})
				return history(goodRun(), reqs)
			},
			wantRule: RuleIntentBeforeIO, wantInMsg: "call ghost",
		},
		"a model request with no intent": {
			build: func() History {
				reqs := goodRequests()
				reqs[0].StoreRV = 10
				return history(goodRun(), reqs)
			},
			wantRule: RuleIntentBeforeIO, wantInMsg: "model request for step 0",
		},
		"a builtin effect in the same revision order before its intent": {
			build: func() History {
				reqs := append(goodRequests(), Request{Kind: KindBuiltin, Server: "deployments/web", Run: key, RunUID: uid,
					CallID: "c1", Key: "u-1/c1", At: at(120), StoreRV: 30, EffectRV: true})
				reqs[1].Applied = false
				return history(goodRun(), reqs)
			},
			wantRule: RuleIntentBeforeIO,
		},
		"a request after the lease of the attempt that started it": {
			build: func() History {
				reqs := goodRequests()
				reqs[1].At = at(6000)
				return history(goodRun(), reqs)
			},
			wantRule: RuleStaleClaimIO, wantInMsg: "after the lease of attempt 1",
		},
		"a builtin effect landing after another attempt claimed the run": {
			build: func() History {
				h := goodRun()
				h.truncate(3)
				h.write(func(st *exagentv1.AgentRunStatus) { // rv 40: recovered, call Uncertain
					st.Calls[0].State = exagentv1.CallUncertain
					st.Phase, st.Claim = exagentv1.PhaseUncertain, nil
				})
				h.write(func(st *exagentv1.AgentRunStatus) { // rv 50: resolved Failed
					st.Calls[0].State = exagentv1.CallFailed
					st.Calls[0].Outcome = &exagentv1.CallOutcome{Result: "no", ResolvedBy: "alice"}
					st.Phase = exagentv1.PhaseFailed
				})
				reqs := goodRequests()[:1]
				reqs = append(reqs, Request{Kind: KindBuiltin, Server: "deployments/web", Run: key, RunUID: uid,
					CallID: "c1", Key: "u-1/c1", Applied: true, At: at(500), StoreRV: 45, EffectRV: true})
				return history(h, reqs)
			},
			wantRule: RuleStaleClaimIO, wantInMsg: "declared Uncertain",
		},
		"two applied effects of one key": {
			build: func() History {
				reqs := goodRequests()
				again := reqs[1]
				again.At, again.StoreRV = at(160), 35
				return history(goodRun(), append(reqs, again))
			},
			wantRule: RuleDuplicateEffect, wantInMsg: "applied 2 times",
		},
		"a confirmed outcome that changes": {
			build: func() History {
				h := goodRun()
				h.write(func(st *exagentv1.AgentRunStatus) {
					st.Calls[0].Outcome = &exagentv1.CallOutcome{Succeeded: true, Result: "another answer"}
				})
				return history(h, goodRequests())
			},
			wantRule: RuleTwoOutcomes, wantInMsg: `had outcome Succeeded "ok"`,
		},
		"a closed call that reopens": {
			build: func() History {
				h := goodRun()
				h.write(func(st *exagentv1.AgentRunStatus) { st.Calls[0].State = exagentv1.CallUncertain })
				return history(h, goodRequests())
			},
			wantRule: RuleTwoOutcomes, wantInMsg: "went from Succeeded to Uncertain",
		},
		"status.attempts going back": {
			build: func() History {
				h := goodRun()
				h.write(func(st *exagentv1.AgentRunStatus) { st.Attempts = 0 })
				return history(h, goodRequests())
			},
			wantRule: RuleAttemptRegressed, wantInMsg: "status.attempts went from 1 to 0",
		},
		"a claim of an older attempt written after a newer one": {
			build: func() History {
				h := goodRun()
				h.truncate(2)
				h.write(func(st *exagentv1.AgentRunStatus) { st.Attempts, st.Claim = 2, claim(2, 9000) })
				h.write(func(st *exagentv1.AgentRunStatus) { st.Claim = claim(1, 9000) })
				h.write(func(st *exagentv1.AgentRunStatus) { st.Phase, st.Claim = exagentv1.PhaseSucceeded, nil })
				return history(h, goodRequests()[:1])
			},
			wantRule: RuleAttemptRegressed, wantInMsg: "claim attempt 1",
		},
		"an outcome committed on top of a newer attempt's claim": {
			build: func() History {
				h := goodRun()
				h.truncate(3)
				h.write(func(st *exagentv1.AgentRunStatus) { st.Attempts, st.Claim = 2, claim(2, 9000) })
				h.write(func(st *exagentv1.AgentRunStatus) {
					st.Calls[0].State = exagentv1.CallSucceeded
					st.Calls[0].Outcome = &exagentv1.CallOutcome{Succeeded: true, Result: "late"}
				})
				h.write(func(st *exagentv1.AgentRunStatus) { st.Phase, st.Claim = exagentv1.PhaseSucceeded, nil })
				return history(h, goodRequests()[:2])
			},
			wantRule: RuleStaleCommit, wantInMsg: "on top of the claim of attempt 2",
		},
		"an intent written under another attempt's claim": {
			build: func() History {
				h := goodRun()
				h.vs[2].Run.Status.Calls[0].Attempt = 7
				return history(h, goodRequests())
			},
			wantRule: RuleStaleCommit, wantInMsg: "intent of call c1 (attempt 7) was written under the claim of attempt 1",
		},
		"a model intent of an attempt that does not hold the claim": {
			build: func() History {
				h := goodRun()
				h.vs[3].Run.Status.Cursor.ModelRequest.Attempt = 3
				return history(h, goodRequests())
			},
			wantRule: RuleStaleCommit, wantInMsg: "model request 2 of step 1 (attempt 3)",
		},
		"an intent made when the lease had expired": {
			build: func() History {
				h := goodRun()
				h.vs[2].Run.Status.Calls[0].StartedAt = mtp(7000)
				return history(h, goodRequests())
			},
			wantRule: RuleExpiredLeaseIntent,
		},
		"an approval decided by someone who is not a decider": {
			build: func() History {
				h := pausedRun()
				h.write(func(st *exagentv1.AgentRunStatus) {
					st.Approvals[0].State, st.Approvals[0].Actor = exagentv1.ApprovalApproved, &exagentv1.Actor{Username: "mallory"}
					st.Receipts = []exagentv1.Receipt{{OperationID: "d1", DecisionName: "d1", Decision: "Approve", Target: "a1",
						Actor: &exagentv1.Actor{Username: "mallory"}}}
					st.Phase = exagentv1.PhaseSucceeded
				})
				return history(h, nil, Decision{Run: key, Name: "d1", Kind: exagentv1.DecisionApprove, Actor: "mallory"})
			},
			wantRule: RuleUnauthorized, wantInMsg: "mallory",
		},
		"more decisions applied than made": {
			build: func() History {
				h := pausedRun()
				h.write(func(st *exagentv1.AgentRunStatus) {
					st.Approvals[0].State, st.Approvals[0].Actor = exagentv1.ApprovalApproved, &exagentv1.Actor{Username: "alice"}
					st.Receipts = []exagentv1.Receipt{
						{OperationID: "d1", DecisionName: "d1", Decision: "Approve", Target: "a1", Actor: &exagentv1.Actor{Username: "alice"}},
						{OperationID: "d2", DecisionName: "d2", Decision: "Approve", Target: "a1", Actor: &exagentv1.Actor{Username: "alice"}},
					}
					st.Phase = exagentv1.PhaseSucceeded
				})
				return history(h, nil, Decision{Run: key, Name: "d1", Kind: exagentv1.DecisionApprove, Actor: "alice", Authorized: true})
			},
			wantRule: RuleDecisionsExceed, wantInMsg: "2 Approve decisions applied, 1 made",
		},
		"an approval decided twice": {
			build: func() History {
				h := pausedRun()
				h.write(func(st *exagentv1.AgentRunStatus) {
					st.Approvals[0].State, st.Approvals[0].Actor = exagentv1.ApprovalApproved, &exagentv1.Actor{Username: "alice"}
				})
				h.write(func(st *exagentv1.AgentRunStatus) {
					st.Approvals[0].State = exagentv1.ApprovalDenied
					st.Phase = exagentv1.PhaseDenied
				})
				return history(h, nil)
			},
			wantRule: RuleApprovalRegressed, wantInMsg: "went from Approved to Denied",
		},
		"a run left non-terminal": {
			build: func() History {
				h := goodRun()
				h.truncate(5)
				return history(h, goodRequests())
			},
			wantRule: RuleNonTerminal, wantInMsg: "ended the scenario Running",
		},
		"a call journaled Failed whose effect applied": {
			build: func() History {
				h := goodRun()
				h.vs[3].Run.Status.Calls[0].State = exagentv1.CallFailed
				h.vs[3].Run.Status.Calls[0].Outcome = &exagentv1.CallOutcome{Result: "HTTP 500"}
				for i := 4; i < len(h.vs); i++ {
					h.vs[i].Run.Status.Calls = h.vs[3].Run.Status.DeepCopy().Calls
				}
				return history(h, goodRequests())
			},
			wantRule: RuleFailedButApplied, wantInMsg: "journaled Failed",
		},
		"a request carrying another call's key": {
			build: func() History {
				reqs := goodRequests()
				reqs[1].Key = "u-1/other"
				return history(goodRun(), reqs)
			},
			wantRule: RuleIdempotencyKeyWrong,
		},
		"a request for a run never recorded": {
			build: func() History {
				reqs := append(goodRequests(), Request{Kind: KindHTTP, Server: "/charge", RunUID: "u-9", CallID: "c1", Key: "u-9/c1", At: at(1)})
				return history(goodRun(), reqs)
			},
			wantRule: RuleUnknownRunRequest,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			vs := Check(tc.build())
			for _, v := range vs {
				if v.Rule == tc.wantRule && strings.Contains(v.Detail, tc.wantInMsg) {
					return
				}
			}
			t.Fatalf("want a %s violation mentioning %q, got:\n%s", tc.wantRule, tc.wantInMsg, joinViolations(vs))
		})
	}
}

// pausedRun: a run whose call c1 waits for approval a1.
func pausedRun() *hist {
	h := &hist{}
	h.write(func(st *exagentv1.AgentRunStatus) { st.Phase = exagentv1.PhaseQueued })
	h.write(func(st *exagentv1.AgentRunStatus) {
		st.Phase, st.Attempts, st.Claim = exagentv1.PhaseRunning, 1, claim(1, 5000)
	})
	h.write(func(st *exagentv1.AgentRunStatus) {
		st.Phase, st.Claim, st.Revision = exagentv1.PhaseAwaitingApproval, nil, 1
		st.Calls = []exagentv1.ToolCall{{ID: "c1", Tool: "charge", State: exagentv1.CallPending}}
		st.Approvals = []exagentv1.Approval{{ID: "a1", CallID: "c1", State: exagentv1.ApprovalPending, Revision: 1}}
	})
	return h
}

func TestTimelineMarksTheOffendingWrite(t *testing.T) {
	vs := goodRun().vs
	got := Timeline(vs, 2)
	if !strings.Contains(got, "=> rv=30") || !strings.Contains(got, "c1:Started@1") || !strings.Contains(got, "claim=m1#1") {
		t.Errorf("timeline:\n%s", got)
	}
}

func joinViolations(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.String())
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

// TestTakenBackLeaseIsNotAnExpiredIntent: a live owner whose lease lapsed
// takes it back in the write that carries the intent (same attempt, a new
// lease valid at the intent): the CAS decides, so it is no violation; the
// same intent without the new lease is.
func TestTakenBackLeaseIsNotAnExpiredIntent(t *testing.T) {
	for name, tc := range map[string]struct {
		lease int
		want  bool
	}{
		"taken back with a new lease": {lease: 12000, want: false},
		"on the lapsed lease":         {lease: 5000, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			h := goodRun()
			h.vs[2].Run.Status.Calls[0].StartedAt = mtp(7000)
			h.vs[2].Run.Status.Claim = claim(1, tc.lease)
			got := false
			for _, v := range Check(history(h, goodRequests())) {
				if v.Rule == RuleExpiredLeaseIntent {
					got = true
				}
			}
			if got != tc.want {
				t.Fatalf("expired-lease violation = %v, want %v", got, tc.want)
			}
		})
	}
}
