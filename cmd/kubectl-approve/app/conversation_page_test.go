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
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// xss is what a hostile person, model or tool writes: each would set
// window.pwned if the page ever treated it as HTML or followed it.
const xss = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2"><a href="javascript:window.pwned=3">click me</a>`

// TestUIConversationThread: alice's conversation on the approver's page.
// Turn 1, said and approved with the CLI, shows as the thread's first
// turn: her words, the Agent's call, her approval and its answer. Her
// reply on the page adds turn 2 — an AgentRun admission attributes to
// her, as say does — which pauses; the inbox then lists the conversation
// as waiting on a person and its row links to the thread; she approves
// on the thread itself, and the thread shows both turns in order. The
// turn's run page links back to the thread. bob, who may create runs but
// is not who started the conversation (followUps SameRequester), is
// refused with admission's words, his text kept, nothing created. Text a
// person or a model wrote stays text.
func TestUIConversationThread(t *testing.T) {
	ns := namespace(t, "ui-conv")
	srv := conversationWithCharges(t, ns, "billing", "charged", nil)
	out := mustPlugin(t, "alice", "say", "billing", "charge c-42 five", "-n", ns)
	m := sayLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("say printed %q", out)
	}
	first := m[1]
	waitRun(t, ns, first, "paused", paused)
	mustPlugin(t, "alice", first, "-n", ns, "--reason", "first turn")
	waitRun(t, ns, first, "to succeed", succeeded)

	base := startPage(t, "alice", ns)
	b := browser(t)
	thread := pageURL(base, "/conversations/"+ns+"/billing")
	do(t, b, "alice opens the thread", chromedp.Navigate(base), chromedp.Navigate(thread), chromedp.WaitVisible(chromedp.CSS("#reply-text")))
	turn1 := text(t, b, "#turn-"+first)
	for _, want := range []string{"Turn 1", "alice asked agent charges", "charge c-42 five", "calls charge", "charged", "Approved by alice", "first turn"} {
		if !strings.Contains(turn1, want) {
			t.Errorf("turn 1 on the thread lacks %q:\n%s", want, turn1)
		}
	}

	// alice replies on the page: turn 2, hers.
	do(t, b, "alice replies",
		chromedp.SendKeys(chromedp.CSS("#reply-text"), "and once more"),
		markStale(), chromedp.Click(chromedp.CSS("#reply button[type=submit]")), waitAnswered())
	if got := text(t, b, "main .flash"); !strings.Contains(got, "asked by alice") {
		t.Fatalf("after the reply the page says %q", got)
	}
	turns := turnsOf(t, ns, "billing")
	if len(turns) != 2 {
		t.Fatalf("%d turns after the reply, want 2", len(turns))
	}
	second := turns[1].Name
	if r := turns[1]; r.Spec.RequestedBy == nil || r.Spec.RequestedBy.Username != "alice" || r.Spec.Input != "and once more" ||
		r.Spec.AgentRef.Name != "charges" {
		t.Fatalf("turn 2 is %+v, want alice's reply to agent charges", r.Spec)
	}
	if got := eval[[]string](t, b, `[...document.querySelectorAll('#thread > li')].map(li => li.dataset.run)`); strings.Join(got, ",") != first+","+second {
		t.Fatalf("the thread shows turns %q, want %s then %s", got, first, second)
	}

	// Turn 2 pauses: the inbox lists the conversation, its row links to
	// the thread.
	id := waitRun(t, ns, second, "paused", paused).Status.Approvals[0].ID
	waitFor(t, "the conversation to wait for a person", func(ctx context.Context) (bool, error) {
		conv := &exagentv1.Conversation{}
		err := cluster().Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "billing"}, conv)
		return err == nil && conv.Status.Phase == exagentv1.ConversationAwaitingApproval, err
	})
	do(t, b, "the inbox", chromedp.Navigate(pageURL(base, "/")), chromedp.WaitVisible(chromedp.CSS("#inbox li")))
	if got := text(t, b, "#conversations"); !strings.Contains(got, ns+"/billing") || !strings.Contains(got, "turn "+second+" waits") {
		t.Errorf("the inbox's conversations read %q", got)
	}
	if href := eval[string](t, b, `document.querySelector('#inbox li a.conversation').getAttribute('href')`); href != "/conversations/"+ns+"/billing#turn-"+second {
		t.Errorf("the inbox row links to %q, want the thread at turn 2", href)
	}

	// alice approves on the thread.
	card := fmt.Sprintf("#t2-approval-%s", id)
	do(t, b, "the thread with turn 2 paused", chromedp.Navigate(thread), chromedp.WaitVisible(chromedp.CSS(card+" textarea[name=reason]")),
		chromedp.SendKeys(chromedp.CSS(card+" textarea[name=reason]"), "second turn"),
		markStale(), chromedp.Click(chromedp.CSS(card+" button[value=Approve]")), waitAnswered())
	if got := text(t, b, "main .flash"); !strings.Contains(got, "Turn "+second+": Applied: approve of approval "+id+" by alice") {
		t.Fatalf("after approving on the thread the page says %q", got)
	}
	if loc := get(t, b, "location", chromedp.Location()); !strings.Contains(loc, "/conversations/"+ns+"/billing") {
		t.Errorf("after approving on the thread the browser is at %s, want the thread", loc)
	}
	waitRun(t, ns, second, "to succeed", succeeded)
	if n := srv.calls(); n != 2 {
		t.Errorf("the charge ran %d times, want once per turn", n)
	}
	do(t, b, "the thread again", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#turn-"+second)))
	turn2 := text(t, b, "#turn-"+second)
	for _, want := range []string{"Turn 2", "alice asked agent charges", "and once more", "charged", "Approved by alice", "second turn"} {
		if !strings.Contains(turn2, want) {
			t.Errorf("turn 2 on the thread lacks %q:\n%s", want, turn2)
		}
	}
	if strings.Contains(turn2, "charge c-42 five") {
		t.Errorf("turn 2 shows turn 1's words again:\n%s", turn2)
	}

	// The turn's run page links to its thread.
	do(t, b, "turn 2's run page", chromedp.Navigate(pageURL(base, "/runs/"+ns+"/"+second)), chromedp.WaitVisible(chromedp.CSS("#conversation-link")))
	if href := eval[string](t, b, `document.querySelector('#conversation-link').getAttribute('href')`); href != "/conversations/"+ns+"/billing#turn-"+second {
		t.Errorf("the run page links to %q", href)
	}

	// bob may create runs, but the conversation takes follow-ups only
	// from alice: refused in admission's words, his text kept.
	bob := browser(t)
	bobBase := startPage(t, "bob", ns)
	do(t, bob, "bob opens the thread", chromedp.Navigate(bobBase), chromedp.Navigate(pageURL(bobBase, "/conversations/"+ns+"/billing")),
		chromedp.WaitVisible(chromedp.CSS("#reply-text")),
		chromedp.SendKeys(chromedp.CSS("#reply-text"), "let me in"),
		markStale(), chromedp.Click(chromedp.CSS("#reply button[type=submit]")), waitAnswered())
	if got := text(t, bob, "main .flash.error"); !strings.Contains(got, "takes follow-ups only from them") || !strings.Contains(got, "alice") {
		t.Errorf("bob's refusal reads %q", got)
	}
	if v := get(t, bob, "bob's text", chromedp.Value(chromedp.CSS("#reply-text"))); v != "let me in" {
		t.Errorf("after the refusal bob's text reads %q, want it kept", v)
	}
	if n := len(turnsOf(t, ns, "billing")); n != 2 {
		t.Fatalf("bob's refused reply: %d turns, want 2", n)
	}

	// What alice writes is shown as text, never as markup.
	do(t, b, "alice replies with markup", chromedp.Navigate(thread), chromedp.WaitVisible(chromedp.CSS("#reply-text")),
		chromedp.SetValue(chromedp.CSS("#reply-text"), xss),
		markStale(), chromedp.Click(chromedp.CSS("#reply button[type=submit]")), waitAnswered())
	if eval[bool](t, b, `window.pwned !== undefined`) {
		t.Fatal("a payload ran")
	}
	if n := eval[int](t, b, `document.querySelectorAll('main img, main script, a[href^="javascript"]').length`); n != 0 {
		t.Fatalf("%d elements came from the text", n)
	}
	if !strings.Contains(text(t, b, "#thread > li:last-child"), `<script>window.pwned=1</script>`) {
		t.Fatalf("the text is not shown as text:\n%s", text(t, b, "#thread"))
	}
}

// TestUIConversationPersonsTurn: a conversation's human participant takes
// a turn — `say --as-participant` asks its people — and the turn is a
// question: `list --conversations` says whose answer it waits for, the
// thread shows the question's form in the turn, alice answers there, and
// her answer is what the participant said in the thread.
func TestUIConversationPersonsTurn(t *testing.T) {
	ns := namespace(t, "ui-conv-person")
	conversationWithCharges(t, ns, "rota", "noted", func(s *exagentv1.ConversationSpec) {
		s.Participants = []exagentv1.Participant{{Name: "oncall", Human: &exagentv1.Approvers{Users: []string{"alice"}}}}
	})
	mustPlugin(t, "alice", "say", "rota", "charge c-42 five", "-n", ns)
	first := turnsOf(t, ns, "rota")[0].Name
	waitRun(t, ns, first, "paused", paused)
	mustPlugin(t, "alice", first, "-n", ns, "--reason", "first turn")
	waitRun(t, ns, first, "to succeed", succeeded)
	out := mustPlugin(t, "alice", "say", "rota", "may I deploy the fix?", "--as-participant", "oncall", "-n", ns)
	if !strings.Contains(out, "turn of conversation rota by participant oncall (a question to alice)") {
		t.Fatalf("say printed %q", out)
	}
	turns := turnsOf(t, ns, "rota")
	if len(turns) != 2 || turns[1].Spec.ConversationRef.Participant != "oncall" {
		t.Fatalf("turns %+v, want the second of participant oncall", turns)
	}
	name := turns[1].Name
	q := waitRun(t, ns, name, "to ask", paused).Status.Approvals[0]
	if !q.IsQuestion() {
		t.Fatalf("the person's turn waits on %+v, want a question", q)
	}
	waitFor(t, "the conversation to wait for a person", func(ctx context.Context) (bool, error) {
		conv := &exagentv1.Conversation{}
		err := cluster().Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rota"}, conv)
		return err == nil && conv.Status.Phase == exagentv1.ConversationAwaitingApproval, err
	})
	if got := mustPlugin(t, "alice", "list", "--conversations", "-n", ns); !strings.Contains(got, "participant oncall to answer "+q.ID) {
		t.Errorf("list --conversations:\n%s", got)
	}

	base := startPage(t, "alice", ns)
	b := browser(t)
	card := "#t2-approval-" + q.ID
	do(t, b, "alice answers on the thread", chromedp.Navigate(base), chromedp.Navigate(pageURL(base, "/conversations/"+ns+"/rota")),
		chromedp.WaitVisible(chromedp.CSS(card+" textarea[name=answer]")),
		chromedp.SendKeys(chromedp.CSS(card+" textarea[name=answer]"), "yes, go ahead"),
		markStale(), chromedp.Click(chromedp.CSS(card+" button[value=Accept]")), waitAnswered())
	if got := text(t, b, "main .flash"); !strings.Contains(got, "Applied: answer of question "+q.ID+" by alice") {
		t.Fatalf("after answering the page says %q", got)
	}
	waitRun(t, ns, name, "to end", succeeded)
	do(t, b, "the thread again", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#turn-"+name)))
	got := text(t, b, "#turn-"+name)
	for _, want := range []string{"alice asked participant oncall", "may I deploy the fix?", "participant oncall answered", "yes, go ahead"} {
		if !strings.Contains(got, want) {
			t.Errorf("the person's turn lacks %q:\n%s", want, got)
		}
	}
	if logs := mustPlugin(t, "alice", "logs", "rota", "-n", ns); !strings.Contains(logs, "[user] [oncall] yes, go ahead") {
		t.Errorf("logs rota lacks the participant's answer:\n%s", logs)
	}
}
