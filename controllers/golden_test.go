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
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

var update = flag.Bool("update", false, "TestGoldenJournals: rewrite the golden journals under testdata/")

// TestGoldenJournals drives three runs to their end on a real apiserver —
// a delegation tree whose grandchild asks a human, a run whose transcript
// is sealed into segments, a run of an MCP server's tools with an
// approval — and compares each one's journal (the statuses of its runs,
// its decisions and its segments, with times, UIDs, hashes, generated
// names and loopback ports normalised: journal.go) with
// testdata/journal-<name>.golden. A change to what a run writes shows as
// a diff of that file; `go test ./controllers -run TestGoldenJournals
// -update` rewrites them.
func TestGoldenJournals(t *testing.T) {
	cases := map[string]func(t *testing.T, h *harness) *journal{
		"delegation_tree": goldenDelegationTree,
		"sealed_run":      goldenSealedRun,
		"mcp_run":         goldenMCPRun,
	}
	for name, drive := range cases {
		t.Run(name, func(t *testing.T) {
			got := drive(t, newHarness(t)).render(t)
			path := filepath.Join("testdata", "journal-"+name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading the golden journal (-update writes it): %v", err)
			}
			if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
				t.Errorf("the journal differs from %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

// goldenDelegationTree is TestDelegationTree's tree (triage → fixer →
// deployer, whose scale asks): alice approves the grandchild's call and
// the root succeeds with the child's output.
func goldenDelegationTree(t *testing.T, h *harness) *journal {
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.tree(ts)
	child, grandchild := h.pausedTree("triage-42")
	h.approve(h.get(grandchild), "alice")
	h.waitPhase("triage-42", exagentv1.PhaseSucceeded)
	j := h.journalOf("triage-42", child, grandchild)
	j.alias(child, "<child of triage-42>")
	j.alias(grandchild, "<grandchild of triage-42>")
	j.alias(ts.srv.URL, "<tool server>")
	return j
}

// goldenSealedRun is TestCrashBetweenSegmentsAndCommit's reader without
// the crash: three pages of 20 KiB from a real tool, read by an
// OpenAI-compatible model, each sealed into a segment as it comes.
func goldenSealedRun(t *testing.T, h *harness) *journal {
	const turns, size = 3, 20 << 10
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, turns, size)
	h.startManager(controllers.Options{})
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL)
	h.createRun("sealed", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRunFor("sealed", "ended", longWait, func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	j := h.journalOf("sealed")
	j.segments = segmentsOf(t, h, run)
	if len(j.segments) == 0 {
		t.Fatal("the run sealed no segment: the golden would not show one")
	}
	j.alias(ps.srv.URL, "<tool server>")
	j.alias(rm.srv.URL, "<model server>")
	return j
}

// goldenMCPRun is TestMCPTools's import: the read-only echo runs, fail
// asks, alice approves, and the server's isError is the failed outcome
// the model sees.
func goldenMCPRun(t *testing.T, h *harness) *journal {
	h.mcpSecret()
	h.startManager(controllers.Options{})
	srv := mcptest.Start()
	t.Cleanup(srv.Close)
	h.importingAgent("imported", srv)
	h.createRun("imported", "imported")
	h.approve(h.waitPhase("imported", exagentv1.PhaseAwaitingApproval), "ok")
	h.waitPhase("imported", exagentv1.PhaseSucceeded)
	j := h.journalOf("imported")
	j.alias(srv.URL, "<mcp server>")
	return j
}
