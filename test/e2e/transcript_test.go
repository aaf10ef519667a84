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
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/tools"
)

const readerTurns = 12

// pageServer answers every read with a page of 8 KiB naming the call, over
// the manager's seal threshold (--seal-value-bytes, 4 KiB by default).
func pageServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = fmt.Fprintf(w, "page for %s: %s", r.Header.Get(tools.HeaderCall), strings.Repeat("lorem ipsum dolor sit amet. ", 300))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// readerAgent reads readerTurns pages, each turn also thinking aloud for
// 3 KiB (inline, under the threshold, so that the hot history grows past
// its budget and old messages are sealed too), then ends.
func readerAgent(ns, url string) string {
	var script strings.Builder
	for i := range readerTurns {
		thought := fmt.Sprintf("thought %d: ", i) + strings.Repeat("I should read the next page. ", 100)
		fmt.Fprintf(&script, "    - text: %q\n      toolCalls:\n      - id: read-%d\n        name: read\n        arguments: {page: %d}\n", thought, i, i)
	}
	script.WriteString("    - text: all pages read\n")
	return fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata:
  name: reader
  namespace: %s
spec:
  model:
    provider: Scripted
    script:
%s  tools:
  - name: read
    parameters: {type: object, properties: {page: {type: integer}}}
    http: {url: %q, timeout: 10s}
  policy:
    default: Allow
`, ns, script.String(), url)
}

// TestSealedTranscript: a run whose tool returns big results is committed
// through AgentRunSegments (the values at once, the old messages once the
// hot status fills); its status stays small, and `kubectl approve show
// --transcript` and `logs` read the whole transcript through the segments
// with the user's own RBAC. Without RBAC on agentrunsegments the user is
// told what is missing; a deleted segment is named.
func TestSealedTranscript(t *testing.T) {
	ns := namespace(t, "e2e-transcript")
	bindApprovers(t, ns)
	pages := pageServer(t)
	must(t, "", readerAgent(ns, pages.URL), "apply", "-f", "-")
	must(t, "", runYAML(ns, "read-all", "reader"), "apply", "-f", "-")

	var run *exagentv1.AgentRun
	eventually(t, 5*time.Minute, "the run ends", func() bool {
		run = getRun(t, ns, "read-all")
		return run.Status.Phase.IsTerminal()
	})
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run ended %s (%s): %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	head := run.Status.Transcript
	if head == nil || head.Segments == 0 || head.Messages == 0 {
		t.Fatalf("nothing of the transcript was sealed into messages: head %+v", head)
	}
	// 12 pages of 8 KiB and 12 thoughts of 3 KiB: ~130 KiB of transcript.
	if b, _ := json.Marshal(run.Status); len(b) > 32<<10 {
		t.Errorf("the status takes %d bytes, over the 32 KiB hot budget", len(b))
	}

	// The segments are ordinary objects: listed by the run's label, with
	// the documented columns.
	listed := must(t, "alice", "", "get", "ars", "-n", ns, "-l", exagentv1.LabelRun+"=read-all")
	if lines := scanLines(listed); len(lines) != int(head.Segments)+1 ||
		strings.Join(strings.Fields(lines[0]), " ") != "NAME RUN INDEX BYTES AGE" {
		t.Errorf("kubectl get ars lists %d lines, want a header and %d segments:\n%s", len(lines), head.Segments, listed)
	}

	total := int(head.Messages) + len(run.Status.History)
	out := must(t, "alice", "", "approve", "show", "read-all", "-n", ns, "--transcript=-1")
	for _, want := range []string{
		fmt.Sprintf("\nTranscript (%d messages):\n", total),
		"  [user]       go\n",
		"  [assistant]  thought 0: I should read the next page.",
		`  [assistant]  → read {"page":0} (call read-0)`,
		"  [tool]       (read-0) page for read-0: lorem ipsum",
		"  [tool]       (read-11) page for read-11: lorem ipsum",
		"  [assistant]  all pages read\n",
		"\nOutput:\n  all pages read\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show --transcript=-1 lacks %q", want)
		}
	}
	if out := must(t, "alice", "", "approve", "show", "read-all", "-n", ns, "--transcript=3"); !strings.Contains(out,
		fmt.Sprintf("\nTranscript (last 3 of %d messages):\n", total)) {
		t.Errorf("show --transcript=3 does not count the whole transcript")
	}

	logs := scanLines(must(t, "alice", "", "approve", "logs", "read-all", "-n", ns))
	for _, want := range []string{"[user] go", `[assistant] calls read({"page":0}) as read-0`, "[tool read-0] page for read-0: lorem ipsum"} {
		if index(logs, want) < 0 {
			t.Errorf("logs lack a line starting %q", want)
		}
	}
	if c := index(logs, "call read-0 Succeeded: page for read-0: lorem ipsum"); c < 0 || c > index(logs, "[tool read-0] ") {
		t.Errorf("logs lack the first (sealed) call's result before its tool message")
	}
	if end := index(logs, "run ended Succeeded"); end != len(logs)-1 {
		t.Errorf("logs should end with the run's end:\n%s", strings.Join(logs, "\n"))
	}

	// bob may read runs but not their segments.
	must(t, "", "", "create", "role", "runs-only", "-n", ns, "--verb=get,list,watch", "--resource=agentruns.exagent.io,agents.exagent.io")
	must(t, "", "", "create", "rolebinding", "bob-runs-only", "-n", ns, "--role=runs-only", "--user=bob")
	denied := mustFail(t, "bob", "approve", "show", "read-all", "-n", ns, "--transcript=-1")
	if !strings.Contains(denied, `run "read-all" keeps part of its transcript in AgentRunSegments`) ||
		!strings.Contains(denied, "reading them needs get and list on agentrunsegments.exagent.io") {
		t.Errorf("show without RBAC on segments should say what is missing:\n%s", denied)
	}

	// A deleted segment breaks the chain: the reader names it.
	first := strings.Fields(scanLines(listed)[1])[0]
	for _, l := range scanLines(listed)[1:] {
		if f := strings.Fields(l); len(f) > 2 && f[2] == "0" {
			first = f[0]
		}
	}
	must(t, "", "", "delete", "ars", first, "-n", ns)
	broken := mustFail(t, "alice", "approve", "show", "read-all", "-n", ns, "--transcript=-1")
	if !strings.Contains(broken, `the sealed transcript of run "read-all" cannot be read: segment `+first+` (index 0) is missing`) {
		t.Errorf("a deleted segment should be named:\n%s", broken)
	}
}
