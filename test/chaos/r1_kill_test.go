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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// testKillMatrix (R1): a real manager process is SIGKILLed in each window
// of the durability protocol — after the intent commit before any IO,
// during the IO, after the IO before the outcome commit — for a model
// request, an http tool call and a builtin mutation. A fresh manager takes
// the runs over. Every run ends Succeeded, directly or Uncertain and then
// resolved by carol with the oracle's evidence; no effect happens twice,
// and the history check holds.
func testKillMatrix(t *testing.T) {
	cl := sharedCluster(t)
	type kase struct {
		run    string
		kind   RequestKind
		window string // failpoint window ("" = the server holds the request: during IO)
		// selector of a transport failpoint (builtin during IO).
		selector string
	}
	cases := []kase{
		{run: "m-intent", kind: KindModel, window: "before-model-request"},
		{run: "m-io", kind: KindModel},
		{run: "m-after", kind: KindModel, window: "after-model-response"},
		{run: "h-intent", kind: KindHTTP, window: "after-intent-commit"},
		{run: "h-io", kind: KindHTTP},
		{run: "h-after", kind: KindHTTP, window: "after-tool-effect"},
		{run: "b-intent", kind: KindBuiltin, window: "after-intent-commit"},
		{run: "b-io", kind: KindBuiltin, window: "builtin-response", selector: "deployments/" + deploymentOf("b-io")},
		{run: "b-after", kind: KindBuiltin, window: "after-tool-effect"},
	}
	kinds := map[string]RequestKind{}
	for _, c := range cases {
		kinds[c.run] = c.kind
	}
	s := newScenario(t, cl, "r1", func(run types.NamespacedName, step int32) Turn {
		if step > 0 || kinds[run.Name] == KindModel {
			return Turn{Text: "done"}
		}
		if kinds[run.Name] == KindBuiltin {
			return Turn{Calls: []ToolCall{scaleCall(run.Name, "scale")}}
		}
		return Turn{Calls: []ToolCall{{ID: "charge", Name: toolCharge, Args: map[string]any{"amount": 5}}}}
	})
	s.createAgent("matrix")

	var fps []string
	for _, c := range cases {
		switch {
		case c.selector != "":
			fps = append(fps, fmt.Sprintf("%s=block@%s", c.window, c.selector))
		case c.window != "":
			fps = append(fps, fmt.Sprintf("%s=block@%s/%s", c.window, s.ns, c.run))
		}
	}
	s.model.HoldWhen(func(r Request) bool { return r.Run.Name == "m-io" })
	s.tools.HoldWhen(func(r Request) bool { return r.Run.Name == "h-io" })

	first, err := cl.startManager(managerOpts{name: "r1-first", failpoints: strings.Join(fps, ","),
		args: []string{"--max-concurrent-reconciles", "16"}})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Kill()
	for _, c := range cases {
		var scales []string
		if c.kind == KindBuiltin {
			scales = []string{"scale"}
		}
		if err := s.createRun(c.run, "matrix", scales...); err != nil {
			t.Fatal(err)
		}
	}

	// Wait until every run sits in its window: the failpoint's line in the
	// log, or the server holding the request.
	held := map[string]bool{}
	err = procs.Poll(2*time.Minute, func() (bool, error) {
		for {
			select {
			case r := <-s.model.Held():
				held[r.Run.Name] = true
				continue
			case r := <-s.tools.Held():
				held[r.Run.Name] = true
				continue
			default:
			}
			break
		}
		if err := first.Alive(); err != nil {
			return false, err
		}
		for _, c := range cases {
			switch {
			case c.selector != "":
				if !first.LogContains("failpoint reached", `"window":"`+c.window+`"`, c.selector) {
					return false, nil
				}
			case c.window != "":
				if !first.LogContains("failpoint reached", `"window":"`+c.window+`"`, s.ns+"/"+c.run) {
					return false, nil
				}
			default:
				if !held[c.run] {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("seed %d: not every run reached its window: %v\nheld: %v\nlog tail:\n%s", seed(), err, held, first.Tail())
	}
	effectsAtKill := map[string]bool{}
	for _, c := range cases {
		effectsAtKill[c.run] = s.applied(c.run, c.kind)
	}

	first.Kill()
	s.kills++
	s.model.ReleaseAll()
	s.tools.ReleaseAll()

	second, err := cl.startManager(managerOpts{name: "r1-second"})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Kill()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.decideLoop(ctx)
	s.waitDone(2 * time.Minute)
	cancel()

	for _, c := range cases {
		r := s.rec.Latest(c.run)
		if r == nil || r.Status.Phase != exagentv1.PhaseSucceeded {
			phase := "unseen"
			if r != nil {
				phase = fmt.Sprintf("%s (%s: %s)", r.Status.Phase, r.Status.Reason, r.Status.Message)
			}
			t.Errorf("seed %d: run %s (killed %s) ended %s, want Succeeded\n%s", seed(), c.run, windowName(c.window), phase,
				Timeline(s.rec.Runs()[s.uids[c.run]], len(s.rec.Runs()[s.uids[c.run]])-1))
			continue
		}
		if c.kind == KindModel {
			continue
		}
		if n := s.effects(c.run, c.kind); n != 1 {
			t.Errorf("seed %d: run %s (killed %s, effect applied at the kill: %v): %d effects, want exactly 1",
				seed(), c.run, windowName(c.window), effectsAtKill[c.run], n)
		}
	}
	s.verify()
}

func windowName(w string) string {
	if w == "" {
		return "during the IO"
	}
	return "at " + w
}

// applied reports whether run's effect (its only tool call) happened.
func (s *scenario) applied(run string, kind RequestKind) bool { return s.effects(run, kind) > 0 }

// effects counts the applied effects of run's calls.
func (s *scenario) effects(run string, kind RequestKind) int {
	uid := s.uids[run]
	n := 0
	if kind == KindBuiltin {
		for _, r := range s.rec.Builtins() {
			if r.RunUID == uid {
				n++
			}
		}
		return n
	}
	for _, r := range s.tools.Journal() {
		if r.RunUID == uid && r.Applied {
			n++
		}
	}
	return n
}
