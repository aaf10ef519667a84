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
	"errors"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestReplace: a schedule's newer run ends the older one as a cancel does
// — a tool call in flight becomes Uncertain (never sent again), pending
// approvals are cancelled, the claim is revoked — with reason Replaced
// naming the new run; an ended run is not touched.
func TestReplace(t *testing.T) {
	env := defaultEnv(t)
	_, toolInFlight := inFlightRun(t)
	_, awaiting := paused(t)
	for name, tc := range map[string]struct {
		s         Status
		uncertain bool
	}{
		"Running, tool IO": {s: toolInFlight, uncertain: true},
		"AwaitingApproval": {s: awaiting},
		"not started":      {s: Status{}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Replace(tc.s, env, "nightly-29549280", "nightly", t0.Add(time.Second))
			if err != nil {
				t.Fatalf("Replace: %v", err)
			}
			if got.Phase != exagentv1.PhaseCancelled || got.Reason != exagentv1.ReasonReplaced || got.Claim != nil || got.PendingApprovals != 0 {
				t.Errorf("phase %s reason %s claim %v pending %d", got.Phase, got.Reason, got.Claim, got.PendingApprovals)
			}
			if !strings.HasPrefix(got.Message, "replaced by run nightly-29549280 of schedule nightly") {
				t.Errorf("message %q", got.Message)
			}
			if u := anyCall(&got, isUncertain); u != tc.uncertain || strings.Contains(got.Message, "Uncertain") != tc.uncertain {
				t.Errorf("uncertain calls %v, message %q; want uncertain %v", u, got.Message, tc.uncertain)
			}
			for _, c := range got.Calls {
				if c.State == exagentv1.CallStarted {
					t.Errorf("call %s still Started", c.ID)
				}
			}
		})
	}
	ended, err := Replace(toolInFlight, env, "a", "nightly", t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Replace(ended, env, "b", "nightly", t0.Add(2*time.Second)); err == nil || !errors.Is(err, ErrNotPending) {
		t.Errorf("Replace of an ended run = %v, want ErrNotPending", err)
	}
}
