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
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// commandTimeout bounds any one kubectl invocation.
const commandTimeout = 2 * time.Minute

// result is what one command printed.
type result struct {
	Stdout, Stderr string
	Err            error
}

// kubectl runs the real kubectl as user ("" is the admin), with stdin.
func kubectl(t *testing.T, user, stdin string, args ...string) result {
	t.Helper()
	return run(t, user, stdin, filepath.Join(s.k8sBin, "kubectl"), args...)
}

// plugin runs the plugin binary directly (for what kubectl does not pass
// through, such as cobra's __complete).
func plugin(t *testing.T, user string, args ...string) result {
	t.Helper()
	return run(t, user, "", filepath.Join(s.bin, "kubectl-approve"), args...)
}

func run(t *testing.T, user, stdin, bin string, args ...string) result {
	t.Helper()
	return runEnv(t, s.env(t, user), userPrompt(user), stdin, bin, args...)
}

// runEnv runs bin with env (s.env or s.envWith), logged as who.
func runEnv(t *testing.T, env []string, who, stdin, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
	t.Logf("%s$ %s %s\n%s%s", who, filepath.Base(bin), strings.Join(args, " "), r.Stdout, r.Stderr)
	return r
}

func userPrompt(user string) string {
	if user == "" {
		return "admin"
	}
	return user
}

// must runs kubectl and fails the test if it fails; it returns stdout.
func must(t *testing.T, user, stdin string, args ...string) string {
	t.Helper()
	r := kubectl(t, user, stdin, args...)
	if r.Err != nil {
		t.Fatalf("kubectl %s (as %s): %v\n%s", strings.Join(args, " "), userPrompt(user), r.Err, r.Stderr)
	}
	return r.Stdout
}

// mustFail runs kubectl expecting failure and returns stderr.
func mustFail(t *testing.T, user string, args ...string) string {
	t.Helper()
	r := kubectl(t, user, "", args...)
	if r.Err == nil {
		t.Fatalf("kubectl %s (as %s) succeeded, want a failure:\n%s", strings.Join(args, " "), userPrompt(user), r.Stdout)
	}
	return r.Stderr
}

// getRun reads an AgentRun as the admin.
func getRun(t *testing.T, ns, name string) *exagentv1.AgentRun {
	t.Helper()
	out := must(t, "", "", "get", "agentrun", name, "-n", ns, "-o", "json")
	run := &exagentv1.AgentRun{}
	if err := json.Unmarshal([]byte(out), run); err != nil {
		t.Fatalf("decoding run %s: %v", name, err)
	}
	return run
}

// decisions lists the namespace's ApprovalDecisions as the admin.
func decisions(t *testing.T, ns string) []exagentv1.ApprovalDecision {
	t.Helper()
	out := must(t, "", "", "get", "approvaldecisions", "-n", ns, "-o", "json")
	var list exagentv1.ApprovalDecisionList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decoding decisions: %v", err)
	}
	return list.Items
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := procs.Poll(timeout, func() (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// samples returns config/samples as one YAML stream moved to namespace ns,
// so that each test gets the documented objects in a namespace of its own.
func samples(t *testing.T, ns string) string {
	t.Helper()
	dir := filepath.Join(s.root, "config", "samples")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The Namespace first: kubectl apply -f creates objects in stream order.
	var docs []string
	for _, e := range entries {
		if e.Name() == "kustomization.yaml" || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.ReplaceAll(string(b), "namespace: demo", "namespace: "+ns)
		if e.Name() == "namespace.yaml" {
			doc = strings.ReplaceAll(doc, "name: demo", "name: "+ns)
		}
		if e.Name() == "namespace.yaml" {
			docs = append([]string{doc}, docs...)
			continue
		}
		docs = append(docs, doc)
	}
	return strings.Join(docs, "\n---\n")
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	must(t, "", "", "create", "namespace", name)
	return name
}

// bindApprovers gives alice exagent-approver and carol exagent-resolver in ns.
func bindApprovers(t *testing.T, ns string) {
	t.Helper()
	must(t, "", "", "create", "rolebinding", "alice-approves", "-n", ns, "--clusterrole=exagent-approver", "--user=alice")
	must(t, "", "", "create", "rolebinding", "resolvers-resolve", "-n", ns, "--clusterrole=exagent-resolver", "--group=resolvers")
	must(t, "", "", "create", "rolebinding", "resolvers-view", "-n", ns, "--clusterrole=exagent-viewer", "--group=resolvers")
}
