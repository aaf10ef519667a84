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
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const (
	waitTimeout = "60s"
	// refusal is what the admission webhook says to bob about agent "ops".
	refusal = `missing verb "approve" on agents/approval`
)

func TestPluginDiscovery(t *testing.T) {
	var version struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(must(t, "", "", "version", "--client", "-o", "json")), &version); err != nil {
		t.Fatal(err)
	}
	if version.ClientVersion.GitVersion != "v1.37.2" {
		t.Errorf("kubectl is %s, want the hack script's v1.37.2", version.ClientVersion.GitVersion)
	}
	out := must(t, "", "", "plugin", "list", "--name-only")
	if !strings.Contains(out, "kubectl-approve") {
		t.Errorf("kubectl plugin list does not find kubectl-approve:\n%s", out)
	}
	help := must(t, "", "", "approve", "--help")
	for _, want := range []string{"kubectl approve RUN [APPROVAL] [flags]", "kubectl approve [command]", "--kubeconfig", "--as "} {
		if !strings.Contains(help, want) {
			t.Errorf("kubectl approve --help lacks %q", want)
		}
	}
}

// TestApproveSamples walks the README's story on config/samples: the run
// pauses, list and show describe it, bob is refused, alice's dry runs
// change nothing, her approval is applied, the Deployment is scaled in the
// apiserver and the run succeeds.
func TestApproveSamples(t *testing.T) {
	ns := "e2e-samples"
	must(t, "", samples(t, ns), "apply", "-f", "-")
	const run = "scale-web"

	out := must(t, "", "", "approve", "wait", run, "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	if diff := cmp.Diff("agentrun.exagent.io/scale-web paused: AwaitingApproval (1 pending approval)\n", out); diff != "" {
		t.Errorf("wait --for=paused (-want +got):\n%s", diff)
	}
	paused := getRun(t, ns, run)
	if len(paused.Status.Approvals) != 1 {
		t.Fatalf("want one approval, got %+v", paused.Status.Approvals)
	}
	approval := paused.Status.Approvals[0]
	if got := must(t, "", "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "1" {
		t.Errorf("before approval the Deployment has %s replicas, want 1", got)
	}

	t.Run("list", func(t *testing.T) {
		lines := scanLines(must(t, "alice", "", "approve", "list", "-n", ns))
		if len(lines) != 2 {
			t.Fatalf("want a header and one row, got:\n%s", strings.Join(lines, "\n"))
		}
		if diff := cmp.Diff([]string{"NAMESPACE", "RUN", "APPROVAL", "TOOL", "ARGS", "REQUESTED", "EXPIRES"}, strings.Fields(lines[0])); diff != "" {
			t.Errorf("header (-want +got):\n%s", diff)
		}
		row := strings.Fields(lines[1])
		if diff := cmp.Diff([]string{ns, run, approval.ID, "scale_deployment", `{"name":"web","replicas":3}`}, row[:5]); diff != "" {
			t.Errorf("row (-want +got):\n%s", diff)
		}
		if got := row[len(row)-2] + " " + row[len(row)-1]; !strings.HasPrefix(got, "in ") {
			t.Errorf("EXPIRES = %q, want a time to come (approvalTimeout 1h)", got)
		}

		var doc struct {
			Items []struct {
				Namespace, Run, Approval, Tool, PayloadHash string
				Revision                                    int64
				Args                                        map[string]any
			}
		}
		if err := json.Unmarshal([]byte(must(t, "", "", "approve", "list", "-A", "-o", "json")), &doc); err != nil {
			t.Fatal(err)
		}
		// alice's RoleBinding is namespaced: -A needs cluster-wide list, as in kubectl.
		stderr := mustFail(t, "alice", "approve", "list", "-A")
		if !strings.HasPrefix(stderr, `Error from server (Forbidden): agentruns.exagent.io is forbidden: User "alice" cannot list resource "agentruns"`) {
			t.Errorf("list -A as alice: %q", stderr)
		}
		found := false
		for _, it := range doc.Items {
			if it.Namespace == ns && it.Run == run {
				found = true
				if it.PayloadHash != approval.PayloadHash || it.Revision != approval.Revision || it.Approval != approval.ID {
					t.Errorf("json item %+v does not carry the approval's hash/revision %s/%d", it, approval.PayloadHash, approval.Revision)
				}
			}
		}
		if !found {
			t.Errorf("list -A -o json lacks %s/%s", ns, run)
		}
		var y map[string]any
		if err := yaml.Unmarshal([]byte(must(t, "alice", "", "approve", "list", "-n", ns, "-o", "yaml")), &y); err != nil || y["items"] == nil {
			t.Errorf("list -o yaml is not a document with items: %v %v", err, y)
		}
		wide := must(t, "alice", "", "approve", "list", "-n", ns, "-o", "wide")
		if !strings.Contains(wide, "PAYLOAD") || !strings.Contains(wide, "ask-before-scaling") {
			t.Errorf("list -o wide lacks the payload or rule:\n%s", wide)
		}
	})

	t.Run("show", func(t *testing.T) {
		out := must(t, "alice", "", "approve", "show", run, "-n", ns)
		for _, want := range []string{
			"Approval " + approval.ID + " (Pending):",
			"scale_deployment (call ",
			`"replicas": 3`,
			"Payload hash:   " + approval.PayloadHash,
			"Policy rule:    ask-before-scaling",
			"You:            RBAC allows you to approve",
			"Transcript (",
			"[user]",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("show lacks %q", want)
			}
		}
		bobs := must(t, "bob", "", "approve", "show", run, "-n", ns)
		if !strings.Contains(bobs, "RBAC does not allow you to approve") {
			t.Errorf("show as bob does not say he may not approve:\n%s", bobs)
		}
	})

	t.Run("refused user", func(t *testing.T) {
		stderr := mustFail(t, "bob", "approve", run, "-n", ns, "--reason", "looks fine")
		want := `error: you are not allowed to approve runs of agent "ops": ` + refusal
		if !strings.HasPrefix(stderr, "error: ") || !strings.Contains(stderr, refusal) || strings.Contains(stderr, "admission webhook") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("bob's refusal:\n%q\nwant one line like\n%q", stderr, want)
		}
		if n := len(decisions(t, ns)); n != 0 {
			t.Errorf("bob's refused decision was stored (%d decisions)", n)
		}
	})

	t.Run("refused before sending", func(t *testing.T) {
		// dave may read runs but create no decision: the plugin's own
		// access review says what is missing before anything is sent,
		// instead of the apiserver's bare "cannot create resource".
		must(t, "", "", "create", "rolebinding", "dave-views", "-n", ns, "--clusterrole=exagent-viewer", "--user=dave")
		stderr := mustFail(t, "dave", "approve", run, "-n", ns, "--reason", "looks fine")
		want := `error: you are not allowed to create approvaldecisions.exagent.io in namespace "` + ns + `", and every decision is one: ` +
			`missing verb "create" on approvaldecisions; ClusterRole exagent-approver grants it (with approve on agents/approval), in a RoleBinding there` + "\n"
		if diff := cmp.Diff(want, stderr); diff != "" {
			t.Errorf("dave's refusal (-want +got):\n%s", diff)
		}
		// bob may create decisions but holds approve on another Agent only.
		stderr = mustFail(t, "bob", "approve", run, "-n", ns, "--reason", "looks fine")
		want = `error: you are not allowed to approve runs of agent "ops": missing verb "approve" on agents/approval ` +
			`(resourceName "ops") in namespace "` + ns + `"; ClusterRole exagent-approver grants it, in a RoleBinding there` + "\n"
		if diff := cmp.Diff(want, stderr); diff != "" {
			t.Errorf("bob's refusal (-want +got):\n%s", diff)
		}
		if n := len(decisions(t, ns)); n != 0 {
			t.Errorf("a refused decision was stored (%d decisions)", n)
		}
	})

	t.Run("dry runs", func(t *testing.T) {
		out := must(t, "alice", "", "approve", run, "-n", ns, "--dry-run=server", "-o", "yaml")
		var d exagentv1.ApprovalDecision
		if err := yaml.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		if d.Spec.Actor == nil || d.Spec.Actor.Username != "alice" {
			t.Errorf("server dry run: the webhook did not stamp alice as actor: %+v", d.Spec.Actor)
		}
		if d.Spec.PayloadHash != approval.PayloadHash || d.Spec.Revision != approval.Revision || d.Spec.ApprovalID != approval.ID {
			t.Errorf("server dry run: decision %+v does not bind the approval %+v", d.Spec, approval)
		}
		client := must(t, "alice", "", "approve", run, "-n", ns, "--dry-run=client")
		if !regexp.MustCompile(`^approvaldecision\.exagent\.io/scale-web-approve-[a-z0-9]{5} created \(dry run\)\n$`).MatchString(client) {
			t.Errorf("client dry run printed %q", client)
		}
		if n := len(decisions(t, ns)); n != 0 {
			t.Errorf("a dry run stored %d decisions", n)
		}
	})

	t.Run("approve", func(t *testing.T) {
		out := must(t, "alice", "", "approve", run, "-n", ns, "--reason", "traffic tonight")
		if !strings.HasPrefix(out, "run "+ns+"/"+run+": approval "+approval.ID+" approved by alice (approvaldecision.exagent.io/scale-web-approve-") {
			t.Errorf("approve printed %q", out)
		}
		done := must(t, "alice", "", "approve", "wait", run, "-n", ns, "--for=done", "--timeout="+waitTimeout)
		if diff := cmp.Diff("agentrun.exagent.io/scale-web done: Succeeded\n", done); diff != "" {
			t.Errorf("wait --for=done (-want +got):\n%s", diff)
		}
		if got := must(t, "", "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "3" {
			t.Errorf("the Deployment has %s replicas, want 3", got)
		}
		ds := decisions(t, ns)
		if len(ds) != 1 || ds[0].Status.Phase != exagentv1.DecisionApplied || ds[0].Spec.Actor == nil || ds[0].Spec.Actor.Username != "alice" || ds[0].Spec.Reason != "traffic tonight" {
			t.Errorf("want one Applied decision by alice, got %+v", ds)
		}
		final := getRun(t, ns, run)
		if final.Status.Output != "Scaled web to 3 replicas." {
			t.Errorf("output = %q", final.Status.Output)
		}
		stderr := mustFail(t, "alice", "approve", run, "-n", ns)
		if diff := cmp.Diff("error: run \"scale-web\" has already ended: Succeeded\n", stderr); diff != "" {
			t.Errorf("approving an ended run (-want +got):\n%s", diff)
		}
		empty := kubectl(t, "alice", "", "approve", "list", "-n", ns)
		if empty.Err != nil || empty.Stdout != "" || empty.Stderr != "No pending approvals in "+ns+" namespace.\n" {
			t.Errorf("list after the run: %+v", empty)
		}
	})
}

// TestSeveralPendingAndDeny: with two pending approvals and none named the
// plugin refuses and lists them; --all approves both. Deny ends a run.
func TestSeveralPendingAndDeny(t *testing.T) {
	ns := "e2e-batch"
	must(t, "", samples(t, ns), "apply", "-f", "-")
	must(t, "", scaleAgent(ns, "batch", `{name: web, replicas: 2}`, `{name: web, replicas: 4}`)+"---\n"+
		runYAML(ns, "two", "batch")+"---\n"+runYAML(ns, "denied", "batch"), "apply", "-f", "-")
	for _, r := range []string{"two", "denied"} {
		must(t, "", "", "approve", "wait", r, "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	}

	stderr := mustFail(t, "alice", "approve", "two", "-n", ns)
	lines := scanLines(stderr)
	if len(lines) != 4 || !strings.HasPrefix(lines[0], `error: run "two" has 2 pending approvals; name one (kubectl approve two APPROVAL) or pass --all:`) ||
		!strings.HasPrefix(lines[1], "NAMESPACE") {
		t.Errorf("ambiguous approve:\n%s", stderr)
	}
	if n := len(decisions(t, ns)); n != 0 {
		t.Fatalf("the refused ambiguous approve stored %d decisions", n)
	}

	// Completion offers the runs with pending approvals, then their ids —
	// also through kubectl, which asks kubectl_complete-approve (docs/plugin.md).
	runs := plugin(t, "alice", "__complete", "-n", ns, "")
	if !strings.Contains(runs.Stdout, "two\t") || !strings.Contains(runs.Stdout, "denied\t") {
		t.Errorf("completion of runs:\n%s", runs.Stdout)
	}
	shim := filepath.Join(s.bin, "kubectl_complete-approve")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec kubectl-approve __complete \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	viaKubectl := must(t, "alice", "", "__complete", "approve", "-n", ns, "")
	if !strings.Contains(viaKubectl, "two") || !strings.Contains(viaKubectl, "denied") {
		t.Errorf("kubectl approve <TAB>:\n%s", viaKubectl)
	}
	ids := plugin(t, "alice", "__complete", "-n", ns, "two", "")
	if !strings.Contains(ids.Stdout, "c1\tscale_deployment") && !strings.Contains(ids.Stdout, "\tscale_deployment") {
		t.Errorf("completion of approval ids:\n%s", ids.Stdout)
	}

	out := must(t, "alice", "", "approve", "two", "-n", ns, "--all")
	if n := strings.Count(out, " approved by alice "); n != 2 {
		t.Errorf("--all approved %d approvals, want 2:\n%s", n, out)
	}
	must(t, "alice", "", "approve", "wait", "two", "-n", ns, "--for=done", "--timeout="+waitTimeout)
	if got := getRun(t, ns, "two"); got.Status.Phase != exagentv1.PhaseSucceeded {
		t.Errorf("run two is %s, want Succeeded", got.Status.Phase)
	}

	first := getRun(t, ns, "denied").Status.Approvals[0].ID
	out = must(t, "alice", "", "approve", "deny", "denied", first, "-n", ns, "--reason", "not tonight")
	if !strings.Contains(out, "approval "+first+" denied by alice") {
		t.Errorf("deny printed %q", out)
	}
	done := must(t, "alice", "", "approve", "wait", "denied", "-n", ns, "--for=done", "--timeout="+waitTimeout)
	if !strings.HasPrefix(done, "agentrun.exagent.io/denied done: Denied") {
		t.Errorf("after deny: %q", done)
	}
	for _, c := range getRun(t, ns, "denied").Status.Calls {
		if c.State == exagentv1.CallSucceeded || c.State == exagentv1.CallStarted {
			t.Errorf("call %s of the denied run ran: %s", c.ID, c.State)
		}
	}
}

func TestCancel(t *testing.T) {
	ns := "e2e-cancel"
	must(t, "", samples(t, ns), "apply", "-f", "-")
	must(t, "", "", "approve", "wait", "scale-web", "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	// --wait=false returns once the decision is stored.
	out := must(t, "alice", "", "approve", "cancel", "scale-web", "-n", ns, "--reason", "superseded", "--wait=false")
	if !strings.HasPrefix(out, "approvaldecision.exagent.io/scale-web-cancel-") || !strings.HasSuffix(out, " created\n") {
		t.Errorf("cancel --wait=false printed %q", out)
	}
	done := must(t, "alice", "", "approve", "wait", "scale-web", "-n", ns, "--for=done", "--timeout="+waitTimeout)
	if !strings.HasPrefix(done, "agentrun.exagent.io/scale-web done: Cancelled") {
		t.Errorf("after cancel: %q", done)
	}
	if got := must(t, "", "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "1" {
		t.Errorf("a cancelled run scaled the Deployment to %s", got)
	}
}

// TestResolveUncertain: a non-idempotent http call whose request was sent
// but never answered is Uncertain — never retried on its own. alice may
// approve but not resolve; carol (exagent-resolver) resolves it with
// evidence, and the run goes on without calling the endpoint again.
func TestResolveUncertain(t *testing.T) {
	ns := namespace(t, "e2e-resolve")
	bindApprovers(t, ns)
	srv := newEffectServer(t, true)
	must(t, "", httpAgent(ns, "payments", srv.URL+"/charge", "Allow", "1s")+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")

	out := must(t, "carol", "", "approve", "wait", "pay", "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	if !strings.HasPrefix(out, "agentrun.exagent.io/pay paused: Uncertain") {
		t.Fatalf("want the run Uncertain, got %q", out)
	}
	show := must(t, "carol", "", "approve", "show", "pay", "-n", ns)
	if !strings.Contains(show, "Uncertain calls (need kubectl approve resolve):") || !strings.Contains(show, "charge-1:") ||
		!strings.Contains(show, "RBAC allows you to resolve") {
		t.Errorf("show does not list the uncertain call:\n%s", show)
	}
	stderr := mustFail(t, "alice", "approve", "resolve", "pay", "-n", ns, "--call", "charge-1", "--outcome", "Succeeded")
	if !strings.HasPrefix(stderr, "error: ") || !strings.Contains(stderr, `missing verb "resolve" on agents/approval`) {
		t.Errorf("alice's resolve refusal: %q", stderr)
	}
	out = must(t, "carol", "", "approve", "resolve", "pay", "-n", ns, "--call", "charge-1", "--outcome", "Succeeded", "--evidence", "charge ch_1 is in the ledger")
	if !strings.Contains(out, "call charge-1 resolved as Succeeded by carol") {
		t.Errorf("resolve printed %q", out)
	}
	must(t, "carol", "", "approve", "wait", "pay", "-n", ns, "--for=done", "--timeout="+waitTimeout)
	final := getRun(t, ns, "pay")
	if final.Status.Phase != exagentv1.PhaseSucceeded {
		t.Errorf("run is %s after resolve, want Succeeded", final.Status.Phase)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("the endpoint was called %d times, want exactly 1 (no automatic retry)", n)
	}
}

// TestCancelRunning: a run with a tool call in flight — no approval
// pending — is cancelled with the plugin: it ends Cancelled at once, the
// call stays Uncertain inside the cancelled run (show lists it), nothing
// calls the endpoint again, and the call is resolved for the record (a
// Retry is refused: nothing runs again).
func TestCancelRunning(t *testing.T) {
	ns := namespace(t, "e2e-cancel-running")
	bindApprovers(t, ns)
	srv := newEffectServer(t, true)
	must(t, "", httpAgent(ns, "payments", srv.URL+"/charge", "Allow", "5m")+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	eventually(t, time.Minute, "the charge in flight", func() bool {
		r := getRun(t, ns, "pay")
		return r.Status.Phase == exagentv1.PhaseRunning && len(r.Status.Calls) == 1 &&
			r.Status.Calls[0].State == exagentv1.CallStarted && len(srv.requests()) == 1
	})

	out := must(t, "alice", "", "approve", "cancel", "pay", "-n", ns, "--reason", "wrong customer")
	if !strings.HasPrefix(out, "run "+ns+"/pay: cancelled by alice (approvaldecision.exagent.io/pay-cancel-") {
		t.Errorf("cancel printed %q", out)
	}
	run := getRun(t, ns, "pay")
	if run.Status.Phase != exagentv1.PhaseCancelled || run.Status.Claim != nil || run.Status.Calls[0].State != exagentv1.CallUncertain {
		t.Fatalf("after cancel: phase %s claim %v call %s; want Cancelled, no claim, the call Uncertain",
			run.Status.Phase, run.Status.Claim, run.Status.Calls[0].State)
	}
	show := must(t, "carol", "", "approve", "show", "pay", "-n", ns)
	if !strings.Contains(show, "Uncertain calls (the run is cancelled: nothing runs again") || !strings.Contains(show, "charge-1:") {
		t.Errorf("show does not list the call in doubt:\n%s", show)
	}
	stderr := mustFail(t, "carol", "approve", "resolve", "pay", "-n", ns, "--outcome", "Retry")
	if !strings.Contains(stderr, "nothing runs again") {
		t.Errorf("retry on a cancelled run: %q", stderr)
	}
	out = must(t, "carol", "", "approve", "resolve", "pay", "-n", ns, "--outcome", "Failed", "--evidence", "no charge in the ledger")
	if !strings.Contains(out, "call charge-1 resolved as Failed by carol") {
		t.Errorf("resolve printed %q", out)
	}
	final := getRun(t, ns, "pay")
	if c := final.Status.Calls[0]; final.Status.Phase != exagentv1.PhaseCancelled || c.State != exagentv1.CallFailed ||
		c.Outcome == nil || c.Outcome.Evidence != "no charge in the ledger" {
		t.Errorf("after resolve: phase %s call %s %+v", final.Status.Phase, c.State, c.Outcome)
	}
	if n := len(srv.requests()); n != 1 || final.Status.Ledger.Requests != 1 {
		t.Errorf("%d charges and %d model requests, want 1 and 1: nothing runs after a cancel", n, final.Status.Ledger.Requests)
	}
}
