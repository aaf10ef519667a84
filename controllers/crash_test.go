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
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
)

// TestCrashWindows kills the manager during a tool call at each window of
// the durability protocol, then starts a new manager (new holder) that
// recovers the run once the dead one's lease expires. Before the intent
// commit the call simply runs; after it, the call is Uncertain (even when
// the effect never happened) until a human resolves it. The tool's journal
// must never show a duplicate effect.
func TestCrashWindows(t *testing.T) {
	type window int
	const (
		beforeIntent window = iota
		afterIntent
		afterEffect
	)
	tests := map[string]struct {
		id     string
		window window
		// resolve is the Resolve outcome given once the run is Uncertain ("" = none expected).
		resolve         exagentv1.ResolveOutcome
		effectsAtCrash  int
		wantUncertain   bool
		wantEffects     int
		wantToolMessage string
		// wantRequests counts model requests, a lost one re-sent and charged.
		wantRequests int64
	}{
		"killed before the intent commit: the new owner runs the call": {
			id: "before-intent", window: beforeIntent, effectsAtCrash: 0, wantEffects: 1, wantToolMessage: `{"ok":true}`, wantRequests: 3,
		},
		"killed after the intent commit: Uncertain, Retry resends with the same key": {
			id: "after-intent-retry", window: afterIntent, effectsAtCrash: 0, wantUncertain: true, resolve: exagentv1.ResolveRetry,
			wantEffects: 1, wantToolMessage: `{"ok":true}`,
		},
		"killed after the effect: Uncertain, resolved Succeeded with evidence": {
			window: afterEffect, effectsAtCrash: 1, wantUncertain: true, resolve: exagentv1.ResolveSucceeded, id: "after-effect-succeeded",
			wantEffects: 1, wantToolMessage: "ticket 42 exists",
		},
		"killed after the effect: Uncertain, resolved Failed": {
			window: afterEffect, effectsAtCrash: 1, wantUncertain: true, resolve: exagentv1.ResolveFailed, id: "after-effect-failed",
			wantEffects: 1, wantToolMessage: "ticket 42 exists",
		},
	}
	h := newHarness(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sub := &harness{t: t, ns: h.ns, c: h.c}
			ts := newToolServer(t)
			id := tc.id
			key := types.NamespacedName{Namespace: h.ns, Name: id}
			sub.createAgent(id, exagentv1.AgentSpec{
				Model: fixture.Scripted(
					fixture.CallTurn("ticket", "open_ticket", map[string]any{"amount": 42}),
					fixture.TextTurn("ticket handled"),
				),
				Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("open_ticket", ts.url("/tickets"))},
				Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
			})

			var once sync.Once
			killed := make(chan struct{})
			kill := func(k func()) {
				once.Do(func() { k(); close(killed) })
			}
			first := sub.startManagerWith(controllers.Options{}, func(k func()) controllers.Hooks {
				hit := func(run types.NamespacedName, w window) {
					if run == key && w == tc.window {
						kill(k)
					}
				}
				return controllers.Hooks{
					BeforeIntentCommit: func(_ context.Context, run types.NamespacedName, _ []loop.ToolInvocation) {
						hit(run, beforeIntent)
					},
					AfterIntentCommit: func(_ context.Context, run types.NamespacedName, _ []loop.ToolInvocation) {
						hit(run, afterIntent)
					},
					AfterEffect: func(_ context.Context, run types.NamespacedName, _ loop.ToolResult) {
						hit(run, afterEffect)
					},
				}
			})
			// A dead owner's active-time reservation is charged whole
			// (docs/architecture.md §4.7), which with the default limit would end the
			// run at its recovery: these runs have no active-time limit.
			t.Cleanup(first.stop)
			sub.createRun(id, id, func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "2s"; r.ActiveTimeLimit = exagentv1.Never })
			<-killed
			first.stop()
			if got := len(ts.journal()); got != tc.effectsAtCrash {
				t.Fatalf("effects at the crash = %d, want %d", got, tc.effectsAtCrash)
			}

			sub.startManager(controllers.Options{})
			if tc.wantUncertain {
				run := sub.waitPhase(id, exagentv1.PhaseUncertain)
				call := run.Status.Calls[0]
				if call.State != exagentv1.CallUncertain {
					t.Fatalf("call state = %s, want Uncertain", call.State)
				}
				sub.decide(alice, sub.decision(id, "resolve").Resolve(call, run.Status.Revision, tc.resolve, "ticket 42 exists"))
				if d := sub.waitDecision(id + "-resolve"); d.Status.Phase != exagentv1.DecisionApplied {
					t.Fatalf("resolve = %s: %s", d.Status.Phase, d.Status.Message)
				}
			}
			done := sub.waitPhase(id, exagentv1.PhaseSucceeded)
			journal := ts.journal()
			if len(journal) != tc.wantEffects {
				t.Fatalf("tool journal has %d effects, want %d: %+v", len(journal), tc.wantEffects, journal)
			}
			for _, r := range journal {
				if want := string(done.UID) + "/ticket"; r.Key != want {
					t.Errorf("Idempotency-Key = %q, want %q", r.Key, want)
				}
			}
			if tc.wantRequests != 0 && done.Status.Ledger.Requests != tc.wantRequests {
				t.Errorf("model requests charged = %d, want %d", done.Status.Ledger.Requests, tc.wantRequests)
			}
			if !historyContains(done, tc.wantToolMessage) {
				t.Errorf("the model did not see %q: %+v", tc.wantToolMessage, done.Status.History)
			}
		})
	}
}
