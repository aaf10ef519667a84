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

package e2e

import (
	"strings"
	"testing"
)

// TestLogsFollow: `kubectl approve logs -f` follows a run from its watch
// until it waits for a human and says for what; after alice approves, it
// follows it to the end, printing the pause, the decision and the end in
// that order.
func TestLogsFollow(t *testing.T) {
	ns := namespace(t, "e2e-logs")
	bindApprovers(t, ns)
	effects := newEffectServer(t, false)
	must(t, "", httpAgent(ns, "charges", effects.URL, "Ask", "5s"), "apply", "-f", "-")
	must(t, "", runYAML(ns, "charge-1", "charges"), "apply", "-f", "-")

	first := scanLines(must(t, "alice", "", "approve", "logs", "-f", "charge-1", "-n", ns, "--timeout=2m"))
	if len(first) == 0 || !strings.HasPrefix(first[len(first)-1], "waiting for a decision: approval ") ||
		!strings.Contains(first[len(first)-1], "kubectl approve charge-1 ") {
		t.Fatalf("logs -f should stop at the pause saying what it waits for:\n%s", strings.Join(first, "\n"))
	}
	if !contains(first, `[assistant] calls charge({"amount":5,"customer":"c-42"}) as charge-1`) {
		t.Errorf("the tool call with its arguments is missing:\n%s", strings.Join(first, "\n"))
	}
	if len(effects.requests()) != 0 {
		t.Fatal("the charge ran before the approval")
	}

	must(t, "alice", "", "approve", "charge-1", "-n", ns, "--reason", "logs test")
	out := scanLines(must(t, "alice", "", "approve", "logs", "-f", "charge-1", "-n", ns, "--timeout=2m"))
	pause, decision, end := index(out, "paused: approval "), index(out, "decision: approval "), index(out, "run ended Succeeded")
	if pause < 0 || decision < 0 || end < 0 || pause >= decision || decision >= end {
		t.Fatalf("want the pause, the decision and the end in order (at %d, %d, %d):\n%s", pause, decision, end, strings.Join(out, "\n"))
	}
	if !strings.Contains(out[decision], "Approved by alice: logs test") {
		t.Errorf("the decision line lacks the actor and reason: %q", out[decision])
	}
	if end != len(out)-1 {
		t.Errorf("logs -f should end with the run's end:\n%s", strings.Join(out, "\n"))
	}
	if got := len(effects.requests()); got != 1 {
		t.Errorf("the charge ran %d times, want 1", got)
	}
	// Without -f: the same lines, and the command returns.
	if again := scanLines(must(t, "alice", "", "approve", "logs", "charge-1", "-n", ns)); strings.Join(again, "\n") != strings.Join(out, "\n") {
		t.Errorf("logs without -f differs from the followed output:\n%s\n---\n%s", strings.Join(again, "\n"), strings.Join(out, "\n"))
	}
}

func index(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}
