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
	"strings"
	"testing"
)

// TestKubectlWaitConditions: `kubectl wait` returns on the Ended condition
// for a run that Succeeded and for one that Failed, and the Succeeded
// condition tells them apart (True / False), as docs/health.md says.
func TestKubectlWaitConditions(t *testing.T) {
	ns := namespace(t, "e2e-wait-conditions")
	effects := newEffectServer(t, false)
	agents := fmt.Sprintf(`apiVersion: exagent.io/v1beta1
kind: Agent
metadata: {name: answers, namespace: %[1]s}
spec:
  model:
    provider: Scripted
    script:
    - text: the answer is 42
---
apiVersion: exagent.io/v1beta1
kind: Agent
metadata: {name: runs-out, namespace: %[1]s}
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - {id: c1, name: charge, arguments: {amount: 1}}
  tools:
  - name: charge
    parameters: {type: object, properties: {amount: {type: integer}}}
    http: {url: %[2]q, timeout: 5s}
  policy: {default: Allow}
`, ns, effects.URL)
	must(t, "", agents, "apply", "-f", "-")
	runs := fmt.Sprintf(`apiVersion: exagent.io/v1beta1
kind: AgentRun
metadata: {name: ok, namespace: %[1]s}
spec: {agentRef: {name: answers}, input: go}
---
apiVersion: exagent.io/v1beta1
kind: AgentRun
metadata: {name: fails, namespace: %[1]s}
spec: {agentRef: {name: runs-out}, input: go}
`, ns)
	must(t, "", runs, "apply", "-f", "-")

	for _, name := range []string{"ok", "fails"} {
		out := must(t, "", "", "wait", "agentrun/"+name, "-n", ns, "--for=condition=Ended", "--timeout="+waitTimeout)
		if want := "agentrun.exagent.io/" + name + " condition met"; strings.TrimSpace(out) != want {
			t.Errorf("wait --for=condition=Ended on %s: %q, want %q", name, out, want)
		}
	}
	must(t, "", "", "wait", "agentrun/ok", "-n", ns, "--for=condition=Succeeded", "--timeout="+waitTimeout)
	must(t, "", "", "wait", "agentrun/ok", "-n", ns, "--for=condition=Ready", "--timeout="+waitTimeout)
	must(t, "", "", "wait", "agentrun/fails", "-n", ns, "--for=condition=Succeeded=False", "--timeout="+waitTimeout)
	must(t, "", "", "wait", "agentrun/fails", "-n", ns, "--for=condition=Stalled", "--timeout="+waitTimeout)
	if got := must(t, "", "", "get", "agentrun/fails", "-n", ns, "-o",
		`jsonpath={.status.phase} {.status.conditions[?(@.type=="Succeeded")].reason}`); got != "Failed ScriptExhausted" {
		t.Errorf("phase and Succeeded reason of the failed run = %q, want %q", got, "Failed ScriptExhausted")
	}
	if got := len(effects.requests()); got != 1 {
		t.Errorf("the failed run's tool was called %d times, want 1", got)
	}
}
