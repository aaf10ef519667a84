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

package app

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
)

const sealedSteps = 12

// page is the big result of step s's read call.
func page(s int) string {
	return fmt.Sprintf("page %d: ", s) + strings.Repeat(fmt.Sprintf("line %d of a long page. ", s), 250)
}

// bigArgs are the arguments of the paused write call, over the seal threshold.
var bigArgs = `{"text":"` + strings.Repeat("a long report. ", 200) + `"}`

// sealedRun builds a run of sealedSteps reads, each returning a 6 KiB page,
// paused on a write with 3 KiB of arguments, twice: plain (everything
// inline, as an old status) and sealed step by step with loop.Seal as the
// manager commits it, with the chain the manager would have created.
func sealedRun(t *testing.T) (plain, sealed *exagentv1.AgentRun, chain []segment.Segment) {
	t.Helper()
	plain = makeRun("reader", "docs").Phase(exagentv1.PhaseRunning).Obj()
	plain.UID = "0b1d-uid"
	sealed = plain.DeepCopy()
	cfg := loop.SealConfig{RunName: plain.Name, RunUID: string(plain.UID), HotBytes: 4 << 10, ValueBytes: 1 << 10}
	at := metav1.NewTime(t0)
	step := func(mut func(st *exagentv1.AgentRunStatus)) {
		mut(&plain.Status)
		mut(&sealed.Status)
		st, segs, err := loop.Seal(sealed.Status, cfg)
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		sealed.Status = st
		chain = append(chain, segs...)
	}
	step(func(st *exagentv1.AgentRunStatus) {
		st.History = append(st.History,
			exagentv1.Message{Role: exagentv1.RoleSystem, Content: "You read the docs."},
			exagentv1.Message{Role: exagentv1.RoleUser, Content: "Summarise every page."})
	})
	for s := range sealedSteps {
		id, args := fmt.Sprintf("read-%d", s), fmt.Sprintf(`{"page":%d}`, s)
		step(func(st *exagentv1.AgentRunStatus) {
			st.Cursor.Step = int32(s)
			st.History = append(st.History,
				exagentv1.Message{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: id, Name: "read", Arguments: args}}},
				exagentv1.Message{Role: exagentv1.RoleTool, ToolCallID: id, Content: page(s)})
			st.Calls = append(st.Calls, exagentv1.ToolCall{ID: id, Step: int32(s), Tool: "read", Args: args,
				State: exagentv1.CallSucceeded, Outcome: &exagentv1.CallOutcome{Result: page(s)}})
			if s == 0 {
				st.Approvals = append(st.Approvals, exagentv1.Approval{ID: id, CallID: id, State: exagentv1.ApprovalApproved,
					Decision: "Approve", Actor: &exagentv1.Actor{Username: "alice"}, RequestedAt: at, Rule: "ask"})
			}
		})
	}
	step(func(st *exagentv1.AgentRunStatus) {
		st.Cursor.Step = sealedSteps
		st.Phase = exagentv1.PhaseAwaitingApproval
		st.History = append(st.History, exagentv1.Message{Role: exagentv1.RoleAssistant,
			ToolCalls: []exagentv1.MessageToolCall{{ID: "write-1", Name: "write", Arguments: bigArgs}}})
		st.Calls = append(st.Calls, exagentv1.ToolCall{ID: "write-1", Step: sealedSteps, Tool: "write", Args: bigArgs,
			State: exagentv1.CallPending, PayloadHash: "sha256:w"})
		st.Approvals = append(st.Approvals, exagentv1.Approval{ID: "write-1", CallID: "write-1",
			State: exagentv1.ApprovalPending, RequestedAt: at, Rule: "ask", PayloadHash: "sha256:w"})
	})

	// The fixture must exercise what it claims: sealed history, calls,
	// approvals and values.
	st := &sealed.Status
	if st.Transcript == nil || st.Transcript.Messages == 0 || st.Transcript.Calls == 0 || len(chain) < 3 {
		t.Fatalf("the fixture sealed too little: head %+v, %d segments", st.Transcript, len(chain))
	}
	if c := st.Call("write-1"); c == nil || c.ArgsRef == nil || c.Args != "" {
		t.Fatalf("the pending call's arguments are not sealed: %+v", c)
	}
	if st.Approval("read-0") != nil {
		t.Fatal("the first step's approval is still hot")
	}
	if err := segment.Verify(*st.Transcript, string(sealed.UID), chain); err != nil {
		t.Fatalf("the fixture's chain: %v", err)
	}
	return plain, sealed, chain
}

// TestShowSealedTranscript: show prints the whole logical transcript and
// the real arguments of a sealed pending call, read from the chain, as it
// would from a run with everything inline.
func TestShowSealedTranscript(t *testing.T) {
	plain, sealed, chain := sealedRun(t)
	total := len(plain.Status.History)
	render := func(v showView) string {
		t.Helper()
		v.Now = t0
		var b bytes.Buffer
		if err := renderShow(&b, v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := render(showView{Run: plain, Tail: -1})

	v, err := resolveShow(sealed, chain, true, -1)
	if err != nil {
		t.Fatal(err)
	}
	got := render(v)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("show --transcript=-1 of the sealed run differs from the plain run (-plain +sealed):\n%s", diff)
	}
	for _, line := range []string{
		fmt.Sprintf("\nTranscript (%d messages):\n", total),
		"  [system]     You read the docs.\n",
		"  [tool]       (read-0) page 0: line 0 of a long page.",
		`      "text": "a long report. a long report.`,
	} {
		if !strings.Contains(got, line) {
			t.Errorf("show lacks %q:\n%s", line, got)
		}
	}

	// The default tail reaches past the hot history: the chain is needed.
	if need := shownCount(sealed, defaultTranscriptTail); need <= len(sealed.Status.History) {
		t.Fatalf("the fixture's hot history (%d) covers the default tail (%d): nothing tested", len(sealed.Status.History), need)
	}

	// A tail within the hot history needs only the segments its refs name.
	var named []segment.Segment
	wantNames := map[string]bool{}
	for _, n := range refNames(sealed, sealed.Status.History[len(sealed.Status.History)-1:]) {
		wantNames[n] = true
	}
	for _, s := range chain {
		if wantNames[s.Name] {
			named = append(named, s)
		}
	}
	v, err = resolveShow(sealed, named, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(render(showView{Run: plain, Tail: 1}), render(v)); diff != "" {
		t.Errorf("show --transcript=1 (-plain +sealed):\n%s", diff)
	}
	if got := render(v); !strings.Contains(got, fmt.Sprintf("\nTranscript (last 1 of %d messages):\n", total)) {
		t.Errorf("the count names the whole transcript:\n%s", got)
	}

	// Without the segment of a sealed value, nothing is shown as if empty.
	if _, err := resolveShow(sealed, nil, false, 2); err == nil ||
		!strings.Contains(err.Error(), `the sealed transcript of run "reader" cannot be read: the arguments of call write-1: value `) {
		t.Errorf("resolving without the segments: %v, want the sealed arguments named", err)
	}
}

// TestShowSealedOutput: a final answer too big for the hot status is shown
// whole, from its segment.
func TestShowSealedOutput(t *testing.T) {
	run := makeRun("writer", "docs").Phase(exagentv1.PhaseSucceeded).Obj()
	run.UID = "0utp-uid"
	answer := "The report:\n" + strings.Repeat("every page read. ", 400) + "\nThe end."
	run.Status.Output = answer
	run.Status.History = []exagentv1.Message{{Role: exagentv1.RoleAssistant, Content: answer}}
	st, segs, err := loop.Seal(run.Status, loop.SealConfig{RunName: run.Name, RunUID: string(run.UID)})
	if err != nil {
		t.Fatal(err)
	}
	sealed := run.DeepCopy()
	sealed.Status = st
	if st.OutputRef == nil || len(st.Output) >= len(answer) {
		t.Fatalf("the output is not sealed: ref %v, %d bytes inline", st.OutputRef, len(st.Output))
	}
	v, err := resolveShow(sealed, segs, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	v.Now = t0
	var b bytes.Buffer
	if err := renderShow(&b, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nOutput:\n  The report:\n  every page read.") || !strings.Contains(b.String(), "\n  The end.\n") {
		t.Errorf("show lacks the whole output:\n%s", b.String())
	}
}

// TestLogsSealedJournal: logs over the chain print exactly what they print
// for the same run with everything inline — sealed messages, calls with
// their results and approvals included, in order.
func TestLogsSealedJournal(t *testing.T) {
	plain, sealed, chain := sealedRun(t)
	j, err := journalOf(sealed, chain)
	if err != nil {
		t.Fatal(err)
	}
	want, got := logEntries(plain, nil), logEntries(sealed, j)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(logEntry{})); diff != "" {
		t.Errorf("logs of the sealed run differ from the plain run (-plain +sealed):\n%s", diff)
	}
	var texts []string
	for _, e := range got {
		texts = append(texts, e.text)
	}
	all := strings.Join(texts, "\n")
	for _, line := range []string{
		"[user] Summarise every page.",
		`[assistant] calls read({"page":0}) as read-0`,
		"decision: approval read-0 Approved by alice",
		"call read-0 Succeeded: page 0: line 0",
		"[tool read-0] page 0: line 0",
		`[assistant] calls write({"text":"a long report.`,
		"paused: approval write-1 requested",
	} {
		if !strings.Contains(all, line) {
			t.Errorf("logs lack %q:\n%s", line, all)
		}
	}
	// Hot only, the sealed part is missing: the journal is what adds it.
	if hot := logEntries(sealed, nil); len(hot) >= len(got) {
		t.Errorf("the hot status alone gives %d entries, the journal %d: the fixture seals nothing", len(hot), len(got))
	}
}
