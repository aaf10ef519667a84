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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestLogEntriesInOrder(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "ops"}}
	run.Status = exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseAwaitingApproval, PendingApprovals: 1,
		History: []exagentv1.Message{
			{Role: exagentv1.RoleUser, Content: "refund 5"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c1", Name: "refund", Arguments: `{"amount":5}`}}},
		},
		Calls:     []exagentv1.ToolCall{{ID: "c1", Tool: "refund", Args: `{"amount":5}`, State: exagentv1.CallPending}},
		Approvals: []exagentv1.Approval{{ID: "a1", CallID: "c1", State: exagentv1.ApprovalPending, Rule: "ask", RequestedAt: at}},
	}
	texts := func(es []logEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.text)
		}
		return out
	}
	paused := texts(logEntries(run, nil))
	want := []string{
		"[user] refund 5",
		`[assistant] calls refund({"amount":5}) as c1`,
		"paused: approval a1 requested (rule ask, never expires)",
	}
	if diff := cmp.Diff(want, paused); diff != "" {
		t.Errorf("paused (-want +got):\n%s", diff)
	}
	if got := waitingFor(run); got != "waiting for a decision: approval a1 of refund (kubectl approve r1 a1 -n ops)" {
		t.Errorf("waitingFor = %q", got)
	}
	// A question (a human participant's turn, AskHuman) says how to answer it.
	asked := run.DeepCopy()
	asked.Status.Approvals[0].Kind, asked.Status.Approvals[0].Question = exagentv1.KindQuestion, &exagentv1.Question{Text: "go on?"}
	if got := waitingFor(asked); got != "waiting for a decision: question a1 (kubectl approve answer r1 a1 -n ops --text …)" {
		t.Errorf("waitingFor a question = %q", got)
	}

	run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.PendingApprovals = exagentv1.PhaseSucceeded, exagentv1.ReasonSucceeded, "done", 0
	run.Status.Approvals[0].State, run.Status.Approvals[0].Actor, run.Status.Approvals[0].Reason = exagentv1.ApprovalApproved, &exagentv1.Actor{Username: "alice"}, "ok"
	run.Status.Calls[0].State, run.Status.Calls[0].Outcome = exagentv1.CallSucceeded, &exagentv1.CallOutcome{Succeeded: true, Result: `{"ok":true}`}
	run.Status.History = append(run.Status.History,
		exagentv1.Message{Role: exagentv1.RoleTool, ToolCallID: "c1", Content: `{"ok":true}`},
		exagentv1.Message{Role: exagentv1.RoleAssistant, Content: "refunded\n5"})
	want = append(want,
		"decision: approval a1 Approved by alice: ok",
		"call c1: asked by rule ask: approved by alice",
		`call c1 Succeeded: {"ok":true}`,
		`[tool c1] {"ok":true}`,
		"[assistant] refunded⏎5",
		"run ended Succeeded: done",
	)
	if diff := cmp.Diff(want, texts(logEntries(run, nil))); diff != "" {
		t.Errorf("ended (-want +got):\n%s", diff)
	}
	if waitingFor(run) != "" {
		t.Error("an ended run waits for nobody")
	}
	// A follower that saw the paused run prints only what is new, in order.
	seen := map[string]bool{}
	for _, e := range logEntries(run, nil) {
		seen[e.key] = len(seen) < len(paused)
	}
	var fresh []string
	for _, e := range logEntries(run, nil) {
		if !seen[e.key] {
			fresh = append(fresh, e.text)
		}
	}
	if diff := cmp.Diff(want[len(paused):], fresh); diff != "" {
		t.Errorf("new lines (-want +got):\n%s", diff)
	}
}

// A waiting call says until when; the run waits for nobody (logs -f
// follows on: it resumes by itself).
func TestLogEntriesOfAWaitingRun(t *testing.T) {
	at := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "ops"}}
	run.Status = exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseWaiting, Reason: exagentv1.ReasonWaiting,
		History: []exagentv1.Message{
			{Role: exagentv1.RoleUser, Content: "restart, then check"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c1", Name: "nap", Arguments: `{"duration":"1h"}`}}},
		},
		Calls: []exagentv1.ToolCall{{ID: "c1", Tool: "nap", Args: `{"duration":"1h"}`, State: exagentv1.CallStarted,
			Wait: &exagentv1.CallWait{Kind: exagentv1.WaitTimer, Since: metav1.NewMicroTime(at), Until: metav1.NewMicroTime(at.Add(time.Hour))}}},
	}
	var got []string
	for _, e := range logEntries(run, nil) {
		got = append(got, e.text)
	}
	want := []string{
		"[user] restart, then check",
		`[assistant] calls nap({"duration":"1h"}) as c1`,
		"call c1 waiting (Timer) until 2026-03-04T11:00:00Z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if w := waitingFor(run); w != "" {
		t.Errorf("waitingFor = %q, want none: a Waiting run resumes by itself", w)
	}
}
