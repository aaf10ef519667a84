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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestExpectHash: show prints the command with the payload hash it
// showed; kubectl approve --expect-hash refuses, sending nothing, when the
// call's hash is another one, and approves with the hash show printed.
func TestExpectHash(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-expect-hash")
	bindApprovers(t, ns)
	srv := newEffectServer(t, false)
	must(t, "", httpAgent(ns, "payments", srv.URL, "Ask", "10s")+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	a := waitPaused(t, ns, "pay").Status.Approvals[0]

	shown := must(t, "alice", "", "approve", "show", "pay", "-n", ns)
	cmd := fmt.Sprintf("kubectl approve pay %s --expect-hash %s", a.ID, a.CurrentPayloadHash())
	if !strings.Contains(shown, cmd) {
		t.Fatalf("show does not print %q:\n%s", cmd, shown)
	}
	stderr := mustFail(t, "alice", "approve", "pay", a.ID, "-n", ns, "--expect-hash", "sha256:what-i-read-before", "--reason", "ok")
	wantStderr(t, stderr, "the call changed since you looked", a.CurrentPayloadHash(), "sha256:what-i-read-before",
		"run kubectl approve show pay again")
	if ds := decisions(t, ns); len(ds) != 0 {
		t.Fatalf("--expect-hash refused, yet %d decisions were created", len(ds))
	}
	must(t, "alice", "", "approve", "pay", a.ID, "-n", ns, "--expect-hash", a.CurrentPayloadHash(), "--reason", "ok")
	if final := waitDone(t, ns, "pay"); final.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s, want Succeeded", final.Status.Phase)
	}
}

// TestStaleRunUIDRefusedByAdmission: a decision bound to another run than
// the one its name finds — what a person's decision becomes when the run
// was deleted and re-created between their read and their create — is
// refused by admission with both UIDs; the plugin's own decisions carry
// the run's UID, and one without it (GitOps) is admitted.
func TestStaleRunUIDRefusedByAdmission(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-stale-uid")
	bindApprovers(t, ns)
	srv := newEffectServer(t, false)
	must(t, "", httpAgent(ns, "payments", srv.URL, "Ask", "10s")+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	run := waitPaused(t, ns, "pay")
	a := run.Status.Approvals[0]
	decision := func(runUID string) string {
		return fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: ApprovalDecision
metadata: {name: pay-by-hand-%d, namespace: %s}
spec:
  runRef: {name: pay}
  approvalID: %s
  decision: Approve
  revision: %d
  payloadHash: %q
  runUID: %q
  reason: by hand
`, len(runUID), ns, a.ID, a.Revision, a.CurrentPayloadHash(), runUID)
	}
	r := kubectl(t, "alice", decision("0b5c0000-dead-beef-0000-000000000000"), "create", "-f", "-")
	if r.Err == nil {
		t.Fatalf("a decision bound to another run's UID was admitted:\n%s", r.Stdout)
	}
	wantStderr(t, r.Stderr, "spec.runUID", fmt.Sprintf("the run was re-created since you looked (uid %s, now %s): reload / kubectl approve show again",
		"0b5c0000-dead-beef-0000-000000000000", run.UID))
	if ds := decisions(t, ns); len(ds) != 0 {
		t.Fatalf("admission refused, yet %d decisions exist", len(ds))
	}

	out := must(t, "alice", "", "approve", "pay", "-n", ns, "--reason", "ok", "-o", "json", "--wait=false")
	if !strings.Contains(out, fmt.Sprintf(`"runUID": %q`, run.UID)) {
		t.Fatalf("the plugin's decision does not carry the run's UID:\n%s", out)
	}
	waitDone(t, ns, "pay")
}
