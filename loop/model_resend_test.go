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
	"fmt"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestModelResendsBoundedPerStep drives a run whose model answers keep
// getting lost — its owner's lease runs out (Recover, a new claim) or it
// hands the run back (Release) before committing the answer — and checks
// that each loss re-sends the step's request, charged again, at most
// maxModelResends times per step, after which the run ends Failed with
// ModelRequestRetriesExhausted before the next paid request.
func TestModelResendsBoundedPerStep(t *testing.T) {
	lost := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "lease"
		}
		return out
	}
	tests := map[string]struct {
		events      []string
		wantKind    ActionKind
		wantReason  string
		wantResends int32
		// wantRequests is how many model requests were charged.
		wantRequests int64
		wantStep     int32
	}{
		"no loss": {
			wantKind: ActCallModel, wantRequests: 1,
		},
		"one lost answer is re-sent": {
			events: lost(1), wantKind: ActCallModel, wantResends: 1, wantRequests: 2,
		},
		"lost answers up to the bound are re-sent": {
			events: lost(maxModelResends), wantKind: ActCallModel, wantResends: maxModelResends, wantRequests: 1 + maxModelResends,
		},
		"one loss past the bound ends the run before another paid request": {
			events: lost(maxModelResends + 1), wantKind: ActFail, wantReason: exagentv1.ReasonModelRequestRetriesExhausted,
			wantResends: maxModelResends, wantRequests: 1 + maxModelResends,
		},
		"a hand-back at shutdown counts as a lost answer": {
			events:   []string{"release", "lease", "release", "release"},
			wantKind: ActFail, wantReason: exagentv1.ReasonModelRequestRetriesExhausted,
			wantResends: maxModelResends, wantRequests: 1 + maxModelResends,
		},
		"a failed request is not a lost answer": {
			events:   []string{"lease", "fail", "lease", "fail", "lease"},
			wantKind: ActCallModel, wantResends: 3, wantRequests: 6,
		},
		"an answer starts the next step with a fresh bound": {
			events:   append(append(lost(maxModelResends), "answer"), lost(maxModelResends)...),
			wantKind: ActCallModel, wantResends: maxModelResends, wantRequests: 2 + 2*maxModelResends, wantStep: 1,
		},
		"the next step has its own bound": {
			events:   append(append(lost(maxModelResends), "answer"), lost(maxModelResends+1)...),
			wantKind: ActFail, wantReason: exagentv1.ReasonModelRequestRetriesExhausted,
			wantResends: maxModelResends, wantRequests: 2 + 2*maxModelResends, wantStep: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// No active-time limit: a crashed owner's reservation is charged
			// whole, which would end the run LimitExceeded first.
			env := mustEnv(t, MakeAgent().HTTPTool("search", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
				MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
			h := newHarness(t, env).claim(w1)
			h.step()
			for i, ev := range tc.events {
				holder := fmt.Sprintf("worker-%d", i+2)
				switch ev {
				case "lease": // the owner dies; its lease runs out
					h.advance(env.LeaseDuration() + time.Second).recover().claim(holder)
				case "release": // the owner stops before the answer came
					h.must("Release", func() error {
						s, err := Release(h.s, env, h.f, h.now)
						h.s = s
						return err
					})
					h.claim(holder)
				case "fail": // the answer came: a failure
					h.must("RecordModelFailure", func() error {
						s, err := RecordModelFailure(h.s, env, h.f, "HTTP 503", h.now)
						h.s = s
						return err
					})
				case "answer": // the answer came: a tool call, run, and the batch closes
					h.respond(tools(call(fmt.Sprintf("s%d", i), "search", `{}`)))
					h.step()
					h.outcome(fmt.Sprintf("s%d", i), ResultSucceeded, "found")
				}
				if act := h.step(); act.Kind == ActFail {
					break
				}
			}
			got := h.act
			if got.Kind != tc.wantKind || got.Reason != tc.wantReason {
				t.Fatalf("last action = %s %q, want %s %q\n%s", got.Kind, got.Reason, tc.wantKind, tc.wantReason, strings.Join(h.log, "\n"))
			}
			c := h.s.Cursor
			if c.ModelResends != tc.wantResends || h.s.Ledger.Requests != tc.wantRequests || c.Step != tc.wantStep {
				t.Errorf("modelResends=%d requests=%d step=%d, want %d, %d, %d\n%s", c.ModelResends, h.s.Ledger.Requests, c.Step,
					tc.wantResends, tc.wantRequests, tc.wantStep, strings.Join(h.log, "\n"))
			}
			if tc.wantKind != ActFail {
				return
			}
			if h.s.Phase != exagentv1.PhaseFailed || h.s.Claim != nil {
				t.Errorf("phase %s, claim %v: want Failed with the claim released", h.s.Phase, h.s.Claim)
			}
			for _, want := range []string{fmt.Sprintf("step %d was lost %d times", tc.wantStep, maxModelResends+1), "leaseDuration 30s", "create the run again"} {
				if !strings.Contains(h.s.Message, want) {
					t.Errorf("message %q does not say %q", h.s.Message, want)
				}
			}
		})
	}
}
