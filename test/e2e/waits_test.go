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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestRemediationWaits walks docs/waits.md on config/samples/waits: the
// remediate run asks before it scales web; alice approves; the run then
// waits, as its ServiceAccount, for web to be Available — Waiting, no
// claim, listed by kubectl approve list --waiting — until the test flips
// the Deployment's condition (nothing runs Deployments here); the run
// then reports, and the model saw the condition met.
func TestRemediationWaits(t *testing.T) {
	ns := "e2e-waits"
	must(t, "", samples(t, ns), "apply", "-f", "-")
	b, err := os.ReadFile(filepath.Join(s.root, "config", "samples", "waits", "remediate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, "", strings.ReplaceAll(string(b), "namespace: demo", "namespace: "+ns), "apply", "-f", "-")
	const run = "remediate-web"

	must(t, "", "", "approve", "wait", run, "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	if out := must(t, "alice", "", "approve", run, "-n", ns, "--reason", "overloaded"); !strings.Contains(out, "approved by alice") {
		t.Fatalf("approve printed %q", out)
	}
	eventually(t, time.Minute, "the run Waiting on web", func() bool {
		return getRun(t, ns, run).Status.Phase == exagentv1.PhaseWaiting
	})
	w := getRun(t, ns, run)
	if w.Status.Claim != nil {
		t.Errorf("a Waiting run holds a claim: %+v", w.Status.Claim)
	}
	if got := must(t, "", "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "3" {
		t.Errorf("the Deployment has %s replicas, want 3 (scaled before the wait)", got)
	}
	list := must(t, "alice", "", "approve", "list", "-n", ns, "--waiting")
	if !strings.Contains(list, "waiting: "+run+" wait-web (wait_until_available) Object Deployment "+ns+"/web Available=True until ") {
		t.Errorf("list --waiting does not show the wait:\n%s", list)
	}
	if got := must(t, "", "", "get", "agentrun", run, "-n", ns, "-o", "jsonpath={.status.conditions[?(@.type==\"Waiting\")].status}"); got != "True" {
		t.Errorf("condition Waiting = %q, want True", got)
	}

	must(t, "", "", "patch", "deployment", "web", "-n", ns, "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"test"}]}}`)
	done := must(t, "", "", "approve", "wait", run, "-n", ns, "--for=done", "--timeout="+waitTimeout)
	if !strings.HasPrefix(done, "agentrun.exagent.io/"+run+" done: Succeeded") {
		t.Fatalf("after the condition flipped: %q", done)
	}
	c := getRun(t, ns, run).Status.Call("wait-web")
	if c == nil || c.State != exagentv1.CallSucceeded || c.Outcome == nil ||
		!strings.HasPrefix(c.Outcome.Result, "condition Available=True met at ") {
		t.Errorf("call wait-web = %+v, want Succeeded: condition Available=True met", c)
	}
}
