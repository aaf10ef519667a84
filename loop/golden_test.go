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
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGoldenRuns drives three whole runs through the public transitions and
// compares their transition logs with testdata/<name>.golden
// (`go test ./loop -run TestGoldenRuns -update` rewrites them).
func TestGoldenRuns(t *testing.T) {
	cases := map[string]func(t *testing.T) *harness{
		"auto_multi_step": func(t *testing.T) *harness {
			env := mustEnv(t, MakeAgent().HTTPTool("search", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
			h := newHarness(t, env).claim("worker-a")
			h.step()
			h.advance(time.Second).respond(tools(call("c1", "search", `{"q":"a"}`), call("c2", "search", `{"q":"b"}`)))
			h.step()
			h.advance(time.Second).outcome("c2", ResultSucceeded, "B").outcome("c1", ResultSucceeded, "A")
			h.step()
			h.advance(time.Second).respond(tools(call("", "search", `{"q":"c"}`)))
			h.step()
			h.advance(time.Second).outcome("call-1-0", ResultFailed, "503 busy")
			h.step()
			h.advance(time.Second).respond(text("done"))
			h.step()
			return h
		},
		"pause_approve_resume": func(t *testing.T) *harness {
			h := newHarness(t, defaultEnv(t)).claim("worker-a")
			h.step()
			h.advance(time.Second).respond(tools(call("s1", "search", `{"q":"price"}`), call("p1", "pay", `{"amount":42}`)))
			h.step()
			h.advance(time.Second).outcome("s1", ResultSucceeded, "42 EUR")
			h.step()
			h.advance(3 * time.Hour) // a human takes their time: never charged
			h.approveAll()
			h.claim("worker-b")
			h.step()
			h.advance(time.Second).outcome("p1", ResultSucceeded, "paid")
			h.step()
			h.advance(time.Second).respond(text("paid 42 EUR"))
			h.step()
			return h
		},
		"crash_uncertain_resolve": func(t *testing.T) *harness {
			// activeTimeLimit Never: a dead owner's reservation is charged whole,
			// which with a limit would exhaust the budget (see TestRecover).
			env := mustEnv(t, MakeAgent().HTTPTool("pay", false).Default(exagentv1.PolicyAllow).Spec(),
				MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
			h := newHarness(t, env).claim("worker-a")
			h.step()
			h.advance(time.Second).respond(tools(call("p1", "pay", `{"amount":42}`)))
			h.step()
			// worker-a crashes after the intent, before the outcome.
			h.advance(time.Minute).recover()
			c := h.s.Calls[0]
			h.decide(DecisionCmd{OperationID: "resolve-1", Decision: exagentv1.DecisionResolve, CallID: "p1",
				PayloadHash: c.PayloadHash, Revision: h.s.Revision, Actor: actor("alice"),
				Outcome: exagentv1.ResolveSucceeded, Evidence: "charge ch_1 exists"})
			h.claim("worker-b")
			h.step()
			h.advance(time.Second).respond(text("paid"))
			h.step()
			return h
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			h := run(t)
			got := strings.Join(h.log, "\n") + "\n"
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("transition log differs from %s (-want +got):\n%s", path, diff)
			}
		})
	}
}
