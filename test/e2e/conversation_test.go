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
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestConversationSayAndLogs: with the plugin against the running
// manager, `say` adds two turns to a Conversation; the second waits
// (WaitingForTurn) while the first is paused, alice approves each in turn,
// and each charge runs once; `logs CONV` prints the conversation turn by
// turn, each turn's prompt once, under its own turn.
func TestConversationSayAndLogs(t *testing.T) {
	ns := namespace(t, "e2e-conv")
	bindApprovers(t, ns)
	effects := newEffectServer(t, false)
	must(t, "", httpAgent(ns, "charges", effects.URL, "Ask", "5s"), "apply", "-f", "-")
	must(t, "", fmt.Sprintf(`apiVersion: exagent.io/v1beta1
kind: Conversation
metadata:
  name: billing
  namespace: %s
spec:
  agentRef: {name: charges}
`, ns), "apply", "-f", "-")

	created := regexp.MustCompile(`^agentrun/(billing-[a-z0-9]+): turn of conversation billing by agent charges`)
	say := func(text string) string {
		t.Helper()
		out := must(t, "", "", "approve", "say", "billing", text, "-n", ns)
		m := created.FindStringSubmatch(strings.TrimSpace(out))
		if m == nil {
			t.Fatalf("say printed %q, want the turn it created", out)
		}
		return m[1]
	}
	first := say("charge c-42 five")
	must(t, "", "", "approve", "wait", first, "--for=paused", "-n", ns, "--timeout=2m")
	second := say("and once more")
	must(t, "", "", "wait", "agentrun/"+second, "-n", ns, "--for=jsonpath={.status.reason}=WaitingForTurn", "--timeout=2m")
	if n := len(effects.requests()); n != 0 {
		t.Fatalf("%d charges before any approval", n)
	}

	must(t, "alice", "", "approve", first, "-n", ns, "--reason", "first turn")
	must(t, "", "", "approve", "wait", second, "--for=paused", "-n", ns, "--timeout=2m")
	must(t, "alice", "", "approve", second, "-n", ns, "--reason", "second turn")
	must(t, "", "", "approve", "wait", second, "--for=done", "-n", ns, "--timeout=2m")
	if n := len(effects.requests()); n != 2 {
		t.Errorf("%d charges, want 2 (one per turn)", n)
	}

	out := must(t, "", "", "approve", "logs", "billing", "-n", ns)
	lines := scanLines(out)
	t1, t2 := index(lines, "── turn 1: "+first), index(lines, "── turn 2: "+second)
	if t1 < 0 || t2 < 0 || t1 > t2 {
		t.Fatalf("logs billing: want turn 1 (%s) then turn 2 (%s):\n%s", first, second, out)
	}
	if strings.Count(out, "[user] charge c-42 five") != 1 || strings.Count(out, "[user] and once more") != 1 ||
		index(lines[t1:t2], "[user] charge c-42 five") < 0 || index(lines[t2:], "[user] and once more") < 0 {
		t.Errorf("logs billing: each turn's prompt once, under its own turn:\n%s", out)
	}
}
