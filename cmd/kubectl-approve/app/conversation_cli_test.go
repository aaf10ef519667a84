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
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// sayLine is the line say prints: the turn it created.
var sayLine = regexp.MustCompile(`(?m)^agentrun/(billing-[a-z0-9]+): turn of conversation billing by agent charges `)

// TestConversationFromTheCLI: alice follows a conversation with
// `logs -f` from before its first turn; `say --wait` adds each turn and
// streams it — its own lines only, never the earlier turn's — until it
// waits for her; `list` names the conversation a paused turn holds up,
// and `list --conversations` lists it with what it waits for; each turn
// approved, the follower has printed both turns in order, each line once,
// and goes on until interrupted.
func TestConversationFromTheCLI(t *testing.T) {
	ns := namespace(t, "cli-conv")
	srv := conversationWithCharges(t, ns, "billing", "charged", nil)

	ctx, stop := context.WithCancel(t.Context())
	var follow syncBuffer
	followed := make(chan error, 1)
	go func() { followed <- plugin(ctx, "alice", &follow, "logs", "-f", "billing", "-n", ns) }()
	waitFor(t, "logs -f to start", func(context.Context) (bool, error) {
		return strings.Contains(follow.String(), "conversation billing: following its turns"), nil
	})

	out := mustPlugin(t, "alice", "say", "billing", "charge c-42 five", "-n", ns, "--wait")
	m := sayLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("say printed:\n%s", out)
	}
	first := m[1]
	for _, want := range []string{"[user] charge c-42 five", `[assistant] calls charge({"amount":5}) as c1`, "paused: approval ",
		"waiting for a decision: approval "} {
		if !strings.Contains(out, want) {
			t.Errorf("say --wait lacks %q:\n%s", want, out)
		}
	}
	if run := waitRun(t, ns, first, "paused", paused); run.Spec.RequestedBy == nil || run.Spec.RequestedBy.Username != "alice" {
		t.Fatalf("turn %s requested by %+v, want alice", first, run.Spec.RequestedBy)
	}

	// list: the approval names the conversation it holds up.
	if got := mustPlugin(t, "alice", "list", "-n", ns); !strings.Contains(got, "CONVERSATION") || !strings.Contains(got, "billing #1") {
		t.Errorf("list does not name the conversation:\n%s", got)
	}
	waitFor(t, "the conversation to wait for a person", func(ctx context.Context) (bool, error) {
		conv := &exagentv1.Conversation{}
		err := cluster().Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "billing"}, conv)
		return err == nil && conv.Status.Phase == exagentv1.ConversationAwaitingApproval, err
	})
	table := mustPlugin(t, "alice", "list", "--conversations", "-n", ns)
	for _, want := range []string{"CONVERSATION", "WAITS FOR", "billing", "AwaitingApproval", first + " (#1)", "a decision on approval "} {
		if !strings.Contains(table, want) {
			t.Errorf("list --conversations lacks %q:\n%s", want, table)
		}
	}
	var doc waitingConversationList
	if err := json.Unmarshal([]byte(mustPlugin(t, "alice", "list", "--conversations", "-n", ns, "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Items) != 1 || doc.Items[0].Open != first || len(doc.Items[0].Approvals) != 1 || doc.Items[0].Turn != 1 {
		t.Errorf("list --conversations -o json: %+v", doc.Items)
	}

	mustPlugin(t, "alice", first, "-n", ns, "--reason", "first turn")
	waitRun(t, ns, first, "to succeed", succeeded)
	out = mustPlugin(t, "alice", "say", "billing", "and once more", "-n", ns, "--wait")
	m = sayLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("say printed:\n%s", out)
	}
	second := m[1]
	if strings.Contains(out, "charge c-42 five") || strings.Contains(out, "first turn") || !strings.Contains(out, "[user] and once more") ||
		!strings.Contains(out, "waiting for a decision: approval ") {
		t.Errorf("say --wait of the second turn prints the earlier turn, or not its own:\n%s", out)
	}
	mustPlugin(t, "alice", second, "-n", ns, "--reason", "second turn")
	waitRun(t, ns, second, "to succeed", succeeded)

	waitFor(t, "logs -f to print the second turn's end", func(context.Context) (bool, error) {
		return strings.Count(follow.String(), "run ended Succeeded") == 2, nil
	})
	stop()
	if err := <-followed; err != nil {
		t.Fatalf("logs -f ended with %v", err)
	}
	lines := strings.Split(follow.String(), "\n")
	order := []string{"── turn 1: " + first + " (agent charges, asked by alice)", "[user] charge c-42 five", "waiting for a decision: approval ",
		"decision: approval ", "[assistant] charged", "run ended Succeeded",
		"── turn 2: " + second + " (agent charges, asked by alice)", "[user] and once more", "decision: approval ", "run ended Succeeded"}
	at := 0
	for _, want := range order {
		for at < len(lines) && !strings.HasPrefix(lines[at], want) {
			at++
		}
		if at == len(lines) {
			t.Fatalf("logs -f: %q missing or out of order:\n%s", want, follow.String())
		}
		at++
	}
	for _, once := range []string{"[user] charge c-42 five", "[user] and once more", "── turn 1: ", "── turn 2: "} {
		if n := strings.Count(follow.String(), once); n != 1 {
			t.Errorf("logs -f printed %q %d times, want once:\n%s", once, n, follow.String())
		}
	}
	if !strings.Contains(follow.String(), "Approved by alice: second turn") {
		t.Errorf("logs -f lacks who decided:\n%s", follow.String())
	}
	if got := srv.calls(); got != 2 {
		t.Errorf("the charge ran %d times, want once per turn", got)
	}

	// Without -f: the same turns, each with how it stands.
	static := mustPlugin(t, "alice", "logs", "billing", "-n", ns)
	if strings.Contains(static, "[system]") {
		t.Errorf("logs billing prints the Agent's instructions as something said:\n%s", static)
	}
	if !strings.Contains(static, "conversation billing: 2 turns") || !strings.Contains(static, "── turn 2: "+second+" (agent charges, asked by alice) Succeeded") {
		t.Errorf("logs billing:\n%s", static)
	}
}
