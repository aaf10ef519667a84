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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestDecisions drives one paused run per case through a human's decision
// (or the clock) and checks where the run ends, what each decision says
// and that the tool journal holds exactly the effects that were allowed.
func TestDecisions(t *testing.T) {
	type want struct {
		phase     exagentv1.RunPhase
		reason    string
		decisions map[string]exagentv1.DecisionPhase
		// messageHas is a substring of each Rejected decision's message.
		messageHas  string
		effects     int
		historyHas  string
		stillPaused bool
	}
	tests := map[string]struct {
		agent  func(*exagentv1.AgentSpec)
		run    func(*exagentv1.AgentRunSpec)
		decide func(h *harness, run *exagentv1.AgentRun)
		want   want
	}{
		"deny with onDeny Stop ends Denied and runs nothing": {
			decide: func(h *harness, run *exagentv1.AgentRun) {
				a := pendingApproval(h.t, run)
				h.decide(alice, h.decision(run.Name, "deny").Deny(a).Reason("too much"))
			},
			want: want{phase: exagentv1.PhaseDenied, reason: exagentv1.ReasonDenied,
				decisions: map[string]exagentv1.DecisionPhase{"deny": exagentv1.DecisionApplied}},
		},
		"deny with onDeny Continue tells the model and finishes": {
			agent: func(a *exagentv1.AgentSpec) { a.Policy.OnDeny = exagentv1.OnDenyContinue },
			decide: func(h *harness, run *exagentv1.AgentRun) {
				a := pendingApproval(h.t, run)
				h.decide(alice, h.decision(run.Name, "deny").Deny(a).Reason("too much"))
			},
			want: want{phase: exagentv1.PhaseSucceeded, reason: exagentv1.ReasonSucceeded, historyHas: "Denied by alice: too much",
				decisions: map[string]exagentv1.DecisionPhase{"deny": exagentv1.DecisionApplied}},
		},
		"cancel ends Cancelled": {
			decide: func(h *harness, run *exagentv1.AgentRun) {
				h.decide(alice, h.decision(run.Name, "cancel").Cancel().Reason("not needed"))
			},
			want: want{phase: exagentv1.PhaseCancelled, reason: exagentv1.ReasonCancelled,
				decisions: map[string]exagentv1.DecisionPhase{"cancel": exagentv1.DecisionApplied}},
		},
		"approval expiry ends Expired": {
			run:  func(r *exagentv1.AgentRunSpec) { r.ApprovalTimeout = "1s" },
			want: want{phase: exagentv1.PhaseExpired, reason: exagentv1.ReasonApprovalExpired},
		},
		"approval expiry with onExpire Continue tells the model and finishes": {
			agent: func(a *exagentv1.AgentSpec) { a.Policy.OnExpire = exagentv1.OnExpireContinue },
			run:   func(r *exagentv1.AgentRunSpec) { r.ApprovalTimeout = "1s" },
			want: want{phase: exagentv1.PhaseSucceeded, reason: exagentv1.ReasonSucceeded,
				historyHas: "Nobody approved the call in time"},
		},
		"deadline during the human wait ends Expired": {
			run: func(r *exagentv1.AgentRunSpec) {
				r.Deadline = &metav1.Time{Time: time.Now().Add(2 * time.Second)}
			},
			want: want{phase: exagentv1.PhaseExpired, reason: exagentv1.ReasonDeadlineExceeded},
		},
		"two decisions for one approval at once: exactly one applies": {
			decide: func(h *harness, run *exagentv1.AgentRun) {
				var wg sync.WaitGroup
				for _, name := range []string{"first", "second"} {
					wg.Add(1)
					go func() { defer wg.Done(); h.approve(run, name) }()
				}
				wg.Wait()
			},
			want: want{phase: exagentv1.PhaseSucceeded, reason: exagentv1.ReasonSucceeded, effects: 1},
		},
		"a stale payloadHash is rejected and nothing runs": {
			decide: func(h *harness, run *exagentv1.AgentRun) {
				a := pendingApproval(h.t, run)
				h.decide(alice, h.decision(run.Name, "stale-hash").Approve(a).PayloadHash("sha256:0000"))
			},
			want: want{stillPaused: true, messageHas: "payloadHash",
				decisions: map[string]exagentv1.DecisionPhase{"stale-hash": exagentv1.DecisionRejected}},
		},
		"a stale revision is rejected and nothing runs": {
			decide: func(h *harness, run *exagentv1.AgentRun) {
				a := pendingApproval(h.t, run)
				h.decide(alice, h.decision(run.Name, "stale-rev").Approve(a).Revision(a.Revision+7))
			},
			want: want{stillPaused: true, messageHas: "revision",
				decisions: map[string]exagentv1.DecisionPhase{"stale-rev": exagentv1.DecisionRejected}},
		},
		"an actor without the approve verb is rejected by the controller's own check": {
			decide: func(h *harness, run *exagentv1.AgentRun) {
				a := pendingApproval(h.t, run)
				h.decide(mallory, h.decision(run.Name, "mallory").Approve(a))
			},
			want: want{stillPaused: true, messageHas: "not allowed to approve",
				decisions: map[string]exagentv1.DecisionPhase{"mallory": exagentv1.DecisionRejected}},
		},
	}
	h := newHarness(t)
	h.startManager(controllers.Options{})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newToolServer(t)
			sub := &harness{t: t, ns: h.ns, c: h.c}
			id := shortName(name)
			spec := refundAgent(ts)
			if tc.agent != nil {
				tc.agent(&spec)
			}
			if tc.want.historyHas != "" {
				spec.Model.Script[1] = fixture.TextTurn("understood, no refund")
			}
			sub.createAgent(id, spec)
			sub.createRun(id, id, func(r *exagentv1.AgentRunSpec) {
				if tc.run != nil {
					tc.run(r)
				}
			})
			paused := sub.waitPhase(id, exagentv1.PhaseAwaitingApproval)
			if tc.decide != nil {
				tc.decide(sub, paused)
			}
			for dname, wantPhase := range tc.want.decisions {
				d := sub.waitDecision(id + "-" + dname)
				if d.Status.Phase != wantPhase {
					t.Errorf("decision %s = %s (%s), want %s", dname, d.Status.Phase, d.Status.Message, wantPhase)
				}
				if wantPhase == exagentv1.DecisionRejected && !strings.Contains(d.Status.Message, tc.want.messageHas) {
					t.Errorf("decision %s message %q does not mention %q", dname, d.Status.Message, tc.want.messageHas)
				}
			}
			var run *exagentv1.AgentRun
			if tc.want.stillPaused {
				run = sub.waitPhase(id, exagentv1.PhaseAwaitingApproval)
				if run.Status.Revision != paused.Status.Revision || len(run.Status.Receipts) != 0 {
					t.Errorf("a rejected decision changed the run: revision %d→%d, receipts %d",
						paused.Status.Revision, run.Status.Revision, len(run.Status.Receipts))
				}
			} else {
				run = sub.waitPhase(id, tc.want.phase)
				if run.Status.Reason != tc.want.reason {
					t.Errorf("reason = %s (%s), want %s", run.Status.Reason, run.Status.Message, tc.want.reason)
				}
			}
			if got := len(ts.journal()); got != tc.want.effects {
				t.Errorf("tool journal has %d effects, want %d: %+v", got, tc.want.effects, ts.journal())
			}
			if tc.want.historyHas != "" && !historyContains(run, tc.want.historyHas) {
				t.Errorf("the model was not told %q: %+v", tc.want.historyHas, run.Status.History)
			}
			if name == "two decisions for one approval at once: exactly one applies" {
				phases := map[exagentv1.DecisionPhase]int{}
				for _, n := range []string{"first", "second"} {
					phases[sub.waitDecision(id+"-"+n).Status.Phase]++
				}
				if diff := cmp.Diff(map[exagentv1.DecisionPhase]int{exagentv1.DecisionApplied: 1, exagentv1.DecisionRejected: 1}, phases); diff != "" {
					t.Errorf("decision results (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func historyContains(run *exagentv1.AgentRun, s string) bool {
	for _, m := range run.Status.History {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

// shortName turns a test case name into an object name.
func shortName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteRune('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}
