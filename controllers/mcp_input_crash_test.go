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
	"github.com/exagent-io/exagent/internal/testing/mcptest"
	"github.com/exagent-io/exagent/loop"
)

// TestMCPInputCrashWindows kills the manager at each window of a call an
// MCP server answers with input requests (the tool idempotent, so that
// recovery re-sends what was in flight with the same key), then lets a new
// manager recover the run. With the server's journal as oracle: the answer
// is never lost, the completing retry always carries the person's answer,
// the requestState and the call's one idempotency key, and nothing is
// sent that the protocol did not allow.
func TestMCPInputCrashWindows(t *testing.T) {
	type window int
	const (
		beforeInputCommit window = iota // the input_required answer is in hand, not committed
		whileWaiting                    // the question is committed: the manager dies while the run waits
		beforeRetryIntent               // the answer is committed; the retry's intent is not
		afterRetryIntent                // the retry's intent is committed, nothing sent yet
		afterRetryEffect                // the retry was answered; its outcome is not committed
	)
	tests := map[string]struct {
		window window
		// wantFirst counts the calls without answers the server sees (a
		// re-send of one in flight at the crash makes two).
		wantFirst int
		// wantRetries counts the calls that carry the answer.
		wantRetries int
	}{
		"killed before the input_required answer is committed: re-sent, then asked":        {window: beforeInputCommit, wantFirst: 2, wantRetries: 1},
		"killed while the question waits: the question survives":                           {window: whileWaiting, wantFirst: 1, wantRetries: 1},
		"killed after the answer, before the retry's intent: the retry is sent once":       {window: beforeRetryIntent, wantFirst: 1, wantRetries: 1},
		"killed after the retry's intent: sent by the next owner":                          {window: afterRetryIntent, wantFirst: 1, wantRetries: 1},
		"killed after the retry was answered: re-sent with the same key, state and answer": {window: afterRetryEffect, wantFirst: 1, wantRetries: 2},
	}
	h := newHarness(t)
	h.mcpSecret()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sub := &harness{t: t, ns: h.ns, c: h.c}
			srv := mcptest.StartStateless()
			defer srv.Close()
			id := []string{"in-before", "in-waiting", "in-retry-before", "in-retry-intent", "in-retry-effect"}[tc.window]
			key := types.NamespacedName{Namespace: h.ns, Name: id}
			sub.createAgent(id, mcpAgent(srv, "form", func(m *exagentv1.MCPTool) { m.Idempotent = true },
				exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
				fixture.CallTurn("c1", "form", map[string]any{}), fixture.TextTurn("done")))

			var once sync.Once
			killed := make(chan struct{})
			kill := func(k func()) { once.Do(func() { k(); close(killed) }) }
			retrying := func(invs []loop.ToolInvocation) bool { return len(invs) == 1 && invs[0].InputRound > 0 }
			first := sub.startManagerWith(controllers.Options{}, func(k func()) controllers.Hooks {
				return controllers.Hooks{
					AfterEffect: func(_ context.Context, run types.NamespacedName, r loop.ToolResult) {
						if run == key && ((tc.window == beforeInputCommit && r.Kind == loop.ResultInputRequired) ||
							(tc.window == afterRetryEffect && r.Kind == loop.ResultSucceeded)) {
							kill(k)
						}
					},
					BeforeIntentCommit: func(_ context.Context, run types.NamespacedName, invs []loop.ToolInvocation) {
						if run == key && tc.window == beforeRetryIntent && retrying(invs) {
							kill(k)
						}
					},
					AfterIntentCommit: func(_ context.Context, run types.NamespacedName, invs []loop.ToolInvocation) {
						if run == key && tc.window == afterRetryIntent && retrying(invs) {
							kill(k)
						}
					},
				}
			})
			t.Cleanup(first.stop)
			sub.createRun(id, id, func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "2s"; r.ActiveTimeLimit = exagentv1.Never })

			answer := func(run *exagentv1.AgentRun) {
				qs := pendingQuestions(run)
				if len(qs) != 1 {
					t.Fatalf("pending questions %+v, want the server's one", qs)
				}
				sub.decide(alice, sub.decision(id, "answer").Answer(qs[0], `{"region":"us"}`, ""))
			}
			switch tc.window {
			case beforeInputCommit:
				<-killed
				first.stop()
				sub.startManager(controllers.Options{})
				answer(sub.waitPhase(id, exagentv1.PhaseAwaitingApproval))
			case whileWaiting:
				paused := sub.waitPhase(id, exagentv1.PhaseAwaitingApproval)
				first.stop()
				sub.startManager(controllers.Options{})
				answer(paused)
			default:
				answer(sub.waitPhase(id, exagentv1.PhaseAwaitingApproval))
				<-killed
				first.stop()
				sub.startManager(controllers.Options{})
			}
			done := sub.waitPhase(id, exagentv1.PhaseSucceeded)
			if st, out := callResult(t, done, "c1"); st != exagentv1.CallSucceeded || out != "form: region=us action=accept state=st-1" {
				t.Fatalf("call = %s %q, want the answer to reach the server", st, out)
			}
			var firsts, retries int
			for _, c := range srv.Calls("form") {
				if c.MetaKey != string(done.UID)+"/c1" {
					t.Errorf("a call carried key %q, want the call's one key", c.MetaKey)
				}
				if c.InputResponses == "" {
					firsts++
					continue
				}
				retries++
				if c.RequestState != "st-1" || c.InputRound != 1 {
					t.Errorf("a retry carried state %q round %v, want st-1 and round 1", c.RequestState, c.InputRound)
				}
			}
			if firsts != tc.wantFirst || retries != tc.wantRetries {
				t.Errorf("the server saw %d calls without answers and %d with, want %d and %d", firsts, retries, tc.wantFirst, tc.wantRetries)
			}
		})
	}
}
