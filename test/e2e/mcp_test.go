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
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// everythingDir is where hack/mcp-everything.sh installed the reference MCP
// server (make test runs it first).
func everythingDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("EXAGENT_MCP_EVERYTHING")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(home, ".cache", "exagent", "mcp-everything")
		if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
			dir = filepath.Join(c, "exagent", "mcp-everything")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "loopback.cjs")); err != nil {
		t.Fatalf("the reference MCP server is not installed in %s: run hack/mcp-everything.sh (make test does): %v", dir, err)
	}
	return dir
}

// TestMCPEverything runs an Agent against a server nobody here wrote,
// @modelcontextprotocol/server-everything over streamable HTTP on
// 127.0.0.1: the Agent imports its echo and get-sum tools, policy asks
// before echo, alice approves with the plugin (show names the server and
// the annotations), the run succeeds with the server's answer in the
// transcript.
// startEverything starts server-everything on a free 127.0.0.1 port for
// the test and returns its address.
func startEverything(t *testing.T, log string) string {
	t.Helper()
	dir := everythingDir(t)
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := procs.Start(procs.Spec{Name: "mcp-everything", Log: filepath.Join(s.work, log),
		Env: append(os.Environ(), "PORT="+strconv.Itoa(port)), Bin: "node", Args: []string{"--require", filepath.Join(dir, "loopback.cjs"),
			filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "streamableHttp"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(syscall.SIGTERM, 5*time.Second) })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := srv.WaitReady(60*time.Second, procs.Listening(addr)); err != nil {
		t.Fatalf("the MCP server listening on %s: %v", addr, err)
	}
	return addr
}

// TestMCPLiveElicitation: server-everything's trigger-elicitation-request
// asks over the live stream (the older way, which no durable pause can
// hold): the call fails at once with the reason — the server must use
// 2026-07-28 input requests — the model is told, and nothing hangs.
func TestMCPLiveElicitation(t *testing.T) {
	addr := startEverything(t, "mcp-everything-elicit.log")
	s.up(t)
	ns := namespace(t, "e2e-elicit")
	must(t, "", fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: asks, namespace: %s}
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - {id: e1, name: ev_trigger-elicitation-request, arguments: {}}
    - text: gave up
  tools:
  - name: everything
    mcp:
      url: http://%s/mcp
      import: {prefix: ev_, tools: [trigger-elicitation-request]}
      timeout: 30s
  policy:
    default: Allow
---
apiVersion: exagent.io/v1alpha1
kind: AgentRun
metadata: {name: elicit-1, namespace: %s}
spec:
  agentRef: {name: asks}
  input: ask me
`, ns, addr, ns), "apply", "-f", "-")
	must(t, "", "", "approve", "wait", "elicit-1", "-n", ns, "--for=done", "--timeout="+waitTimeout)
	run := getRun(t, ns, "elicit-1")
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run is %s (%s: %s), want Succeeded (the model told)", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	c := run.Status.Call("e1")
	if c == nil || c.State != exagentv1.CallFailed || c.Outcome == nil ||
		!strings.Contains(c.Outcome.Result, "must speak MCP 2026-07-28 input requests") {
		t.Fatalf("call e1 = %+v, want Failed saying the server must use input requests", c)
	}
}

func TestMCPEverything(t *testing.T) {
	addr := startEverything(t, "mcp-everything.log")

	ns := namespace(t, "e2e-mcp")
	bindApprovers(t, ns)
	must(t, "", fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: everything, namespace: %s}
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - {id: echo-1, name: ev_echo, arguments: {message: hello from exagent}}
    - text: echoed
  tools:
  - name: everything
    mcp:
      url: http://%s/mcp
      import: {prefix: ev_, tools: [echo, get-sum]}
      timeout: 30s
  policy:
    default: Deny
    rules:
    - {name: ask-echo, tools: [ev_echo], action: Ask}
---
apiVersion: exagent.io/v1alpha1
kind: AgentRun
metadata: {name: mcp-1, namespace: %s}
spec:
  agentRef: {name: everything}
  input: say hello
`, ns, addr, ns), "apply", "-f", "-")

	must(t, "", "", "approve", "wait", "mcp-1", "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	show := must(t, "alice", "", "approve", "show", "mcp-1", "-n", ns)
	for _, want := range []string{"Tool:           ev_echo", "MCP server:     http://" + addr + "/mcp (tool echo)", "Annotations:"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	must(t, "alice", "", "approve", "mcp-1", "-n", ns)
	must(t, "alice", "", "approve", "wait", "mcp-1", "-n", ns, "--for=done", "--timeout="+waitTimeout)
	run := getRun(t, ns, "mcp-1")
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run is %s (%s: %s), want Succeeded", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	found := false
	for _, m := range run.Status.History {
		if m.Role == exagentv1.RoleTool && strings.Contains(m.Content, "Echo: hello from exagent") {
			found = true
		}
	}
	if !found {
		t.Errorf("the transcript lacks the server's answer: %+v", run.Status.History)
	}
}
