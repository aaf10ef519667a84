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
	"github.com/exagent-io/exagent/loop"
)

// TestDelegationSample walks docs/delegation.md on config/samples/delegation:
// the triage run hands the scale to a deploy child run; the child's
// approval shows through the root (list with the path, show with the tree);
// carol, allowed by RBAC and by the deploy Agent but not in triage's
// approvers, is refused; alice approves by the root's name; the Deployment
// is scaled once and the root succeeds with the child's usage in its ledger.
func TestDelegationSample(t *testing.T) {
	ns := "e2e-delegation"
	must(t, "", samples(t, ns), "apply", "-f", "-")
	must(t, "", "", "create", "rolebinding", "carol-approves", "-n", ns, "--clusterrole=exagent-approver", "--user=carol")
	b, err := os.ReadFile(filepath.Join(s.root, "config", "samples", "delegation", "agents.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, "", strings.ReplaceAll(string(b), "namespace: demo", "namespace: "+ns), "apply", "-f", "-")
	const root = "triage-web"

	out := must(t, "", "", "approve", "wait", root, "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	child := loop.ChildName(root, string(getRun(t, ns, root).UID), "hand-off")
	if !strings.HasPrefix(out, "agentrun.exagent.io/"+root+" paused: AwaitingApproval") {
		t.Errorf("wait --for=paused: %q", out)
	}
	if got := getRun(t, ns, root); !strings.Contains(got.Status.Message, child) || !strings.Contains(got.Status.Message, "scale_deployment") {
		t.Errorf("root message %q does not name the child and its tool", got.Status.Message)
	}

	list := must(t, "alice", "", "approve", "list", "-n", ns)
	if !strings.Contains(list, root+" › "+child) {
		t.Errorf("list does not show the child's approval with its path:\n%s", list)
	}
	show := must(t, "alice", "", "approve", "show", root, "-n", ns)
	if !strings.Contains(show, "Tree:") || !strings.Contains(show, "    "+child+" (agent deploy): AwaitingApproval  pending: ") {
		t.Errorf("show ROOT does not print the tree:\n%s", show)
	}

	refused := mustFail(t, "carol", "approve", root, "-n", ns)
	if !strings.Contains(refused, "ancestor run "+root) {
		t.Errorf("carol's approval: %q, want refused by the root's approvers", refused)
	}
	out = must(t, "alice", "", "approve", root, "-n", ns, "--reason", "tonight's traffic")
	if !strings.Contains(out, "approved by alice") {
		t.Errorf("approve by the root printed %q", out)
	}
	done := must(t, "", "", "approve", "wait", root, "-n", ns, "--for=done", "--timeout="+waitTimeout)
	if !strings.HasPrefix(done, "agentrun.exagent.io/"+root+" done: Succeeded") {
		t.Errorf("after approval: %q", done)
	}
	if got := must(t, "", "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "3" {
		t.Errorf("the Deployment has %s replicas, want 3", got)
	}
	r, c := getRun(t, ns, root), getRun(t, ns, child)
	if c.Status.Phase != exagentv1.PhaseSucceeded {
		t.Errorf("child is %s, want Succeeded", c.Status.Phase)
	}
	if want := c.Status.Ledger.Requests + 2; r.Status.Ledger.Requests != want {
		t.Errorf("root requests = %d, want its 2 and the child's %d", r.Status.Ledger.Requests, c.Status.Ledger.Requests)
	}

	// Deleting the root deletes the tree (the manager does it: no garbage collector here).
	must(t, "", "", "delete", "agentrun", root, "-n", ns)
	eventually(t, time.Minute, "the child deleted with its root", func() bool {
		r := kubectl(t, "", "", "get", "agentrun", child, "-n", ns)
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound")
	})
}
