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
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/exagent-io/exagent/internal/testing/procs"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// runURL is the run page of ns/name on the page at base (its token
// dropped: the browser holds the session cookie by then).
func runURL(base, ns, name string) string {
	base, _, _ = strings.Cut(base, "?")
	return strings.TrimSuffix(base, "/") + "/runs/" + ns + "/" + name
}

// decideOnPage fills the reason of approval id on the run page open in
// ctx and presses the button of decision (Approve or Deny).
func decideOnPage(t *testing.T, ctx context.Context, id, decision, reason string) {
	t.Helper()
	card := "#approval-" + id
	do(t, ctx, decision+" "+id,
		chromedp.WaitVisible(chromedp.CSS(card+" textarea[name=reason]")),
		chromedp.SendKeys(chromedp.CSS(card+" textarea[name=reason]"), reason),
		markStale(),
		chromedp.Click(chromedp.CSS(card+" button[value="+decision+"]")),
		waitAnswered(),
	)
	if eval[bool](t, ctx, `document.querySelector('main .flash') === null`) {
		t.Fatalf("%s %s: refused before the run page: %s", decision, id, text(t, ctx, "body"))
	}
}

// markStale marks the page shown now, so that waitAnswered waits for the
// next one (the POST's answer), not for what this one already shows.
func markStale() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`document.body.dataset.stale = "1", true`)(ctx, tg)
		return err
	})
}

// waitAnswered waits for the page a POST answered with: the run page
// again, or a refusal before it (plain text).
func waitAnswered() chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS("body:not([data-stale]) main .flash, body:not([data-stale]) > pre"))
}

// TestUIApproveLive: alice keeps the inbox open; when a run pauses its
// approval appears without a reload (the event stream), she opens the
// run, approves with a reason, the run Succeeds, the decision's actor is
// alice (admission stamped the person, not the page), and the row leaves
// the inbox she still has open. bob, who may create decisions but not
// approve this Agent's runs, sees the refusal in plain words and nothing
// changes. A POST without the CSRF token is refused.
func TestUIApproveLive(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui")
	bindApprovers(t, ns)
	must(t, "", "", "create", "rolebinding", "bob-views", "-n", ns, "--clusterrole=exagent-viewer", "--user=bob")
	srv := newEffectServer(t, false)
	must(t, "", httpAgent(ns, "payments", srv.URL, "Ask", "10s"), "apply", "-f", "-")

	base := startUI(t, "alice", "--port", "0", "-n", ns)
	inbox := browser(t)
	do(t, inbox, "opening the inbox", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#empty")))
	if u := mustGet(t, inbox, "location", chromedp.Location()); strings.Contains(u, "token=") {
		t.Errorf("the token stayed in the address bar: %s", u)
	}
	if who := text(t, inbox, "#who"); who != "alice" {
		t.Errorf("the page acts as %q, want alice", who)
	}
	eval[bool](t, inbox, `window.notReloaded = true`)

	must(t, "", runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	row := "#inbox li[data-run='" + ns + "/pay']"
	do(t, inbox, "waiting for the approval to appear live", chromedp.WaitVisible(chromedp.CSS(row)))
	if !eval[bool](t, inbox, `window.notReloaded === true`) {
		t.Fatal("the inbox was reloaded: the row must come from the event stream")
	}
	card := text(t, inbox, row)
	for _, want := range []string{ns + "/pay", "charge", "payments", "rule charges", `"customer": "c-42"`, "verb approve on agents/approval \"payments\""} {
		if !strings.Contains(card, want) {
			t.Errorf("the inbox row lacks %q:\n%s", want, card)
		}
	}
	screenshot(t, inbox, "inbox")
	paused := getRun(t, ns, "pay")
	id := paused.Status.Approvals[0].ID

	// bob: a viewer, no approve verb: the page says why, nothing is sent.
	bobBase := startUI(t, "bob", "--port", "0", "-n", ns)
	bob := browser(t)
	do(t, bob, "bob opens the run", chromedp.Navigate(bobBase), chromedp.Navigate(runURL(bobBase, ns, "pay")))
	decideOnPage(t, bob, id, "Approve", "looks fine to me")
	refusal := text(t, bob, "main .flash.error")
	// The plugin's own access review, in its words: what is missing and
	// the ClusterRole that grants it.
	if !strings.Contains(refusal, `you are not allowed to create approvaldecisions.exagent.io in namespace "`+ns+`"`) ||
		!strings.Contains(refusal, "ClusterRole exagent-approver grants it") {
		t.Errorf("bob's refusal reads %q", refusal)
	}
	if v := mustGet(t, bob, "bob's reason", chromedp.Value(chromedp.CSS("#approval-"+id+" textarea[name=reason]"))); v != "looks fine to me" {
		t.Errorf("after the refusal bob's reason reads %q, want it kept", v)
	}
	if n := len(decisions(t, ns)); n != 0 || getRun(t, ns, "pay").Status.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("bob's refused approval changed something: %d decisions", n)
	}

	// CSRF: the same browser, same origin, same cookie, but no token.
	page := tab(t, inbox)
	do(t, page, "alice opens the run", chromedp.Navigate(runURL(base, ns, "pay")))
	status := eval[int](t, page, fmt.Sprintf(`fetch(location.pathname + '/decide', {method: 'POST',
		body: new URLSearchParams({decision: 'Approve', approval: %q, reason: 'forged'})}).then(r => r.status)`, id))
	if status != http.StatusForbidden || len(decisions(t, ns)) != 0 {
		t.Fatalf("a POST without the CSRF token: HTTP %d, %d decisions; want 403 and none", status, len(decisions(t, ns)))
	}
	screenshot(t, page, "run")

	decideOnPage(t, page, id, "Approve", "the customer asked for it")
	if ok := text(t, page, "main .flash"); !strings.Contains(ok, "Applied: approve of approval "+id+" by alice") {
		t.Errorf("after approving the page says %q", ok)
	}
	final := waitDone(t, ns, "pay")
	if final.Status.Phase != exagentv1.PhaseSucceeded || len(srv.requests()) != 1 {
		t.Fatalf("run %s with %d tool requests, want Succeeded and one", final.Status.Phase, len(srv.requests()))
	}
	ds := decisions(t, ns)
	if len(ds) != 1 || ds[0].Spec.Actor == nil || ds[0].Spec.Actor.Username != "alice" || ds[0].Spec.Reason != "the customer asked for it" {
		t.Fatalf("decisions %+v, want one by alice with her reason", ds)
	}
	do(t, inbox, "the row leaves the inbox", chromedp.WaitNotPresent(chromedp.CSS(row)), chromedp.WaitVisible(chromedp.CSS("#empty")))
}

// TestUIQuorum: a quorum approval shows its votes (n of m, who voted);
// erin's vote on the page completes it.
func TestUIQuorum(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui-quorum")
	for _, g := range []string{"security", "sre"} {
		must(t, "", "", "create", "rolebinding", g+"-approves", "-n", ns, "--clusterrole=exagent-approver", "--group="+g)
	}
	srv := newEffectServer(t, false)
	rules := "    - name: two-person\n      tools: [charge]\n      action: Ask\n" +
		"      quorum: {approvals: 2, groups: [{group: sre, count: 1}, {group: security, count: 1}]}\n"
	agent := chargeAgent(ns, "payments", srv.URL, rules, chargeCall("c1", 5))
	must(t, "", agent+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	waitPaused(t, ns, "pay")
	must(t, "frank", "", "approve", "pay", "-n", ns, "--reason", "sre says yes")

	base := startUI(t, "erin", "--port", "0", "-n", ns)
	b := browser(t)
	do(t, b, "erin opens the inbox", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#inbox li .votes")))
	if v := text(t, b, "#inbox li .votes"); v != "1 of 2" {
		t.Errorf("the quorum shows %q, want 1 of 2", v)
	}
	if q := text(t, b, "#inbox li .quorum"); !strings.Contains(q, "frank") || !strings.Contains(q, "1 more from group security") {
		t.Errorf("the quorum line reads %q", q)
	}
	id := getRun(t, ns, "pay").Status.Approvals[0].ID
	do(t, b, "erin opens the run", chromedp.Navigate(runURL(base, ns, "pay")))
	decideOnPage(t, b, id, "Approve", "security says yes")
	if final := waitDone(t, ns, "pay"); final.Status.Phase != exagentv1.PhaseSucceeded || len(final.Status.Approvals[0].Votes) != 2 {
		t.Fatalf("after erin's vote: %s with votes %+v", final.Status.Phase, final.Status.Approvals[0].Votes)
	}
}

// xss is what a hostile model or tool writes: each would set
// window.pwned if the page ever treated it as HTML or followed it.
const xss = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2"><a href="javascript:window.pwned=3">click me</a>`

// TestUIRunContentStaysText: a tool result and a model answer carrying
// script, an onerror image and a javascript: link are shown as text on
// the run page and in the inbox; none executes, none becomes an element.
func TestUIRunContentStaysText(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui-xss")
	bindApprovers(t, ns)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(xss))
	}))
	t.Cleanup(srv.Close)
	agent := fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: hostile, namespace: %s}
spec:
  model:
    provider: Scripted
    script:
    - toolCalls: [{id: look-1, name: look, arguments: {q: x}}]
    - toolCalls: [{id: charge-1, name: charge, arguments: {customer: %q}}]
    - text: %q
  tools:
  - {name: look, http: {url: %q}}
  - {name: charge, http: {url: %q}}
  policy:
    default: Allow
    rules:
    - {name: charges, tools: [charge], action: Ask}
`, ns, xss, xss, srv.URL, srv.URL)
	must(t, "", agent+"---\n"+runYAML(ns, "x", "hostile"), "apply", "-f", "-")
	waitPaused(t, ns, "x")

	base := startUI(t, "alice", "--port", "0", "-n", ns)
	b := browser(t)
	check := func(where string) {
		t.Helper()
		if pwned := eval[bool](t, b, `window.pwned !== undefined`); pwned {
			t.Fatalf("%s: a payload ran", where)
		}
		if n := eval[int](t, b, `document.querySelectorAll('main img, main script, a[href^="javascript"]').length`); n != 0 {
			t.Fatalf("%s: %d elements came from run content", where, n)
		}
		if !strings.Contains(text(t, b, "main"), `<script>window.pwned=1</script>`) {
			t.Fatalf("%s: the payload is not shown as text", where)
		}
	}
	do(t, b, "the inbox", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#inbox li")))
	check("the inbox")
	do(t, b, "the run page", chromedp.Navigate(runURL(base, ns, "x")), chromedp.WaitVisible(chromedp.CSS("#transcript")))
	check("the paused run")
	must(t, "alice", "", "approve", "x", "-n", ns, "--reason", "test")
	waitDone(t, ns, "x")
	do(t, b, "the ended run", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#transcript")))
	check("the ended run")
}

// TestUITranscriptPages: a transcript sealed into segments is shown a
// segment at a time: the latest page holds the tail only, and Older
// walks the chain back to the first message.
func TestUITranscriptPages(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui-transcript")
	bindApprovers(t, ns)
	pages := pageServer(t)
	must(t, "", readerAgent(ns, pages.URL)+"---\n"+runYAML(ns, "read-all", "reader"), "apply", "-f", "-")
	run := waitDone(t, ns, "read-all")
	head := run.Status.Transcript
	if head == nil || head.Segments < 2 {
		t.Fatalf("want a transcript of several segments, got %+v", head)
	}
	base := startUI(t, "alice", "--port", "0", "-n", ns)
	b := browser(t)
	do(t, b, "the run page", chromedp.Navigate(base), chromedp.Navigate(runURL(base, ns, "read-all")), chromedp.WaitVisible(chromedp.CSS("#transcript")))
	latest := text(t, b, "#transcript")
	if strings.Contains(latest, "page for read-0:") || !strings.Contains(latest, "all pages read") {
		t.Fatalf("the latest page should hold the tail only:\n%.2000s", latest)
	}
	// Each message number is shown once, on one page: the sealed ones on
	// the segment pages, the tail on the latest.
	numbers := func() []int {
		return eval[[]int](t, b, `[...document.querySelectorAll('#transcript li.msg')].map(li => li.value)`)
	}
	shown := map[int]int{}
	for _, n := range numbers() {
		shown[n]++
	}
	pagesSeen := 0
	for ; pagesSeen <= int(head.Segments); pagesSeen++ {
		if eval[int](t, b, `document.querySelectorAll('a.older').length`) == 0 {
			break
		}
		// Follow the link as a person would; Navigate waits for the page.
		href := eval[string](t, b, `document.querySelector('a.older').href`)
		do(t, b, "older", chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS("#transcript")))
		if title := text(t, b, "#transcript-h"); !strings.Contains(title, fmt.Sprintf("Segment %d of %d", int(head.Segments)-pagesSeen, head.Segments)) {
			t.Fatalf("older page %d is titled %q", pagesSeen+1, title)
		}
		for _, n := range numbers() {
			shown[n]++
		}
	}
	if pagesSeen != int(head.Segments) {
		t.Fatalf("walked %d older pages, want %d", pagesSeen, head.Segments)
	}
	total := int(head.Messages) + len(run.Status.History)
	for n := 1; n <= total; n++ {
		if shown[n] != 1 {
			t.Errorf("message %d is shown on %d pages, want 1", n, shown[n])
		}
	}
	if len(shown) != total {
		t.Errorf("%d message numbers shown, want %d", len(shown), total)
	}
}

// TestUIServerMode: --serve answers 401 without a bearer token and acts
// as the token's person with one — a ServiceAccount's, as a proxy would
// forward — never with the kubeconfig's credentials it was started with.
func TestUIServerMode(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui-serve")
	srv := newEffectServer(t, false)
	must(t, "", "", "create", "serviceaccount", "reviewer", "-n", ns)
	must(t, "", "", "create", "rolebinding", "reviewer-approves", "-n", ns, "--clusterrole=exagent-approver", "--serviceaccount="+ns+":reviewer")
	must(t, "", httpAgent(ns, "payments", srv.URL, "Ask", "10s")+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	id := waitPaused(t, ns, "pay").Status.Approvals[0].ID
	token := strings.TrimSpace(must(t, "", "", "create", "token", "reviewer", "-n", ns))

	p, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(p)
	// Started with the admin's kubeconfig: the page must not use it.
	base := startUI(t, "", "--serve", "--address", "127.0.0.1:"+port, "-n", ns)
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d, want 401", resp.StatusCode)
	}

	b := browser(t)
	do(t, b, "as the reviewer", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"Authorization": "Bearer " + token}})
		return err
	}), chromedp.Navigate(runURL(base, ns, "pay")))
	if who := text(t, b, "#who"); who != "system:serviceaccount:"+ns+":reviewer" {
		t.Errorf("the page acts as %q, want the token's ServiceAccount", who)
	}
	decideOnPage(t, b, id, "Approve", "approved through the proxy")
	waitDone(t, ns, "pay")
	ds := decisions(t, ns)
	if len(ds) != 1 || ds[0].Spec.Actor == nil || ds[0].Spec.Actor.Username != "system:serviceaccount:"+ns+":reviewer" {
		t.Fatalf("decisions %+v, want one by the token's ServiceAccount", ds)
	}
}

// TestUIQuestion: a question shows its text, choices and schema, and its
// form instead of Approve/Deny; an answer outside the schema is refused
// in admission's words and the form keeps it; alice's answer on the page
// is what the model reads next, with alice as the actor.
func TestUIQuestion(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui-ask")
	bindApprovers(t, ns)
	schema := "{type: object, properties: {cluster: {type: string, enum: [eu, us]}}, required: [cluster]}"
	must(t, "", askAgent(ns, "asker", schema, `{question: "Which cluster should I drain?"}`)+"---\n"+runYAML(ns, "ask", "asker"), "apply", "-f", "-")
	q := waitPaused(t, ns, "ask").Status.Approvals[0]

	base := startUI(t, "alice", "--port", "0", "-n", ns)
	b := browser(t)
	do(t, b, "the inbox", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#inbox li .question")))
	if got := text(t, b, "#inbox li .question-text"); !strings.Contains(got, "Which cluster should I drain?") {
		t.Errorf("the inbox shows the question as %q", got)
	}
	do(t, b, "the run page", chromedp.Navigate(runURL(base, ns, "ask")), chromedp.WaitVisible(chromedp.CSS("#approval-"+q.ID+" textarea[name=answer]")))
	if n := eval[int](t, b, `document.querySelectorAll('#approval-`+q.ID+` button[value=Approve]').length`); n != 0 {
		t.Errorf("a question offers Approve")
	}
	answer := func(doc string) {
		t.Helper()
		card := "#approval-" + q.ID
		do(t, b, "answer "+doc,
			chromedp.SetValue(chromedp.CSS(card+" textarea[name=answer]"), doc),
			markStale(),
			chromedp.Click(chromedp.CSS(card+" button[value=Accept]")),
			waitAnswered())
	}
	answer(`{"cluster": "mars"}`)
	if got := text(t, b, "main .flash"); !strings.Contains(got, "the answer does not match the question's schema") {
		t.Errorf("an answer outside the schema: the page says %q", got)
	}
	if v := mustGet(t, b, "the kept answer", chromedp.Value(chromedp.CSS("#approval-"+q.ID+" textarea[name=answer]"))); v != `{"cluster": "mars"}` {
		t.Errorf("after the refusal the answer field reads %q", v)
	}
	answer(`{"cluster": "eu"}`)
	if got := text(t, b, "main .flash"); !strings.Contains(got, "Applied: answer of question "+q.ID+" by alice") {
		t.Errorf("after answering the page says %q", got)
	}
	final := waitDone(t, ns, "ask")
	a := final.Status.Approval(q.ID)
	if final.Status.Phase != exagentv1.PhaseSucceeded || a == nil || a.Actor == nil || a.Actor.Username != "alice" || a.Question.Answer != `{"cluster":"eu"}` {
		t.Fatalf("run %s, question %+v: want Succeeded with alice's answer", final.Status.Phase, a)
	}
}

// TestUIDelegationTree: a run that delegated two levels down shows its
// whole tree on its page — the child and the grandchild, indented by
// depth — and names the grandchild that waits for a person.
func TestUIDelegationTree(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui-tree")
	bindApprovers(t, ns)
	delegating := func(name, to string, depth int) string {
		return fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: %s, namespace: %s}
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - {id: hand-off, name: next, arguments: {input: go on}}
    - text: handed off
  tools:
  - name: next
    agent: {agentRef: {name: %s}}
  policy:
    default: Allow
  limits: {maxDepth: %d}
---
`, name, ns, to, depth)
	}
	leaf := fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: leaf, namespace: %s}
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - {id: ask-1, name: ask_human, arguments: {question: "Proceed?"}}
    - text: done
  tools:
  - name: ask_human
    builtin: {operation: AskHuman}
  policy:
    default: Allow
`, ns)
	must(t, "", delegating("top", "middle", 2)+delegating("middle", "leaf", 1)+leaf+"---\n"+runYAML(ns, "tree", "top"), "apply", "-f", "-")
	must(t, "", "", "approve", "wait", "tree", "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	top := getRun(t, ns, "tree")
	if len(top.Status.Children) != 1 {
		t.Fatalf("the root has children %+v", top.Status.Children)
	}
	middle := getRun(t, ns, top.Status.Children[0].Name)
	if len(middle.Status.Children) != 1 {
		t.Fatalf("the middle run has children %+v", middle.Status.Children)
	}
	grandchild := middle.Status.Children[0].Name

	base := startUI(t, "alice", "--port", "0", "-n", ns)
	b := browser(t)
	do(t, b, "the root's page", chromedp.Navigate(base), chromedp.Navigate(runURL(base, ns, "tree")),
		chromedp.WaitVisible(chromedp.CSS(".tree li.depth-2")))
	if got := text(t, b, ".tree li.depth-1"); !strings.Contains(got, middle.Name) {
		t.Errorf("the tree's first level shows %q, want the child %s", got, middle.Name)
	}
	if got := text(t, b, ".tree li.depth-2"); !strings.Contains(got, grandchild) || !strings.Contains(got, "waits for 1 approval(s)") {
		t.Errorf("the tree's second level shows %q, want the waiting grandchild %s", got, grandchild)
	}
	must(t, "alice", "", "approve", "answer", grandchild, "-n", ns, "--text", "yes")
	must(t, "", "", "approve", "wait", "tree", "-n", ns, "--for=done", "--timeout="+waitTimeout)
}

// TestUIStaleFormIsRefused: a decision binds what the page showed. alice
// loads a run page; before she clicks, the call she sees stops being the
// run's call — the run deleted and re-created under the same name with
// another call under the same approval ID; or, under a quorum, another
// approver's vote edits the arguments. Her click is refused with "the
// call changed since you looked: reload" and no ApprovalDecision of hers
// is created.
func TestUIStaleFormIsRefused(t *testing.T) {
	s.up(t)
	srv := newEffectServer(t, false)
	// refused clicks Approve on the card of approval id, open in b since
	// before the change, and checks the refusal and that the namespace
	// still holds only want decisions.
	refused := func(t *testing.T, b context.Context, ns, id string, want int) {
		t.Helper()
		card := "#approval-" + id
		do(t, b, "the stale click",
			chromedp.SendKeys(chromedp.CSS(card+" textarea[name=reason]"), "I read it"),
			markStale(),
			chromedp.Click(chromedp.CSS(card+" button[value=Approve]")),
			waitAnswered())
		if got := text(t, b, "body"); !strings.Contains(got, "the call changed since you looked: reload") {
			t.Fatalf("the stale click: the page says %q", got)
		}
		if ds := decisions(t, ns); len(ds) != want {
			t.Fatalf("after the stale click: %d decisions %+v, want %d", len(ds), ds, want)
		}
		if run := getRun(t, ns, "pay"); run.Status.Phase != exagentv1.PhaseAwaitingApproval {
			t.Fatalf("after the stale click the run is %s", run.Status.Phase)
		}
	}

	t.Run("re-created", func(t *testing.T) {
		ns := namespace(t, "e2e-ui-stale-uid")
		bindApprovers(t, ns)
		rules := "    - {name: charges, tools: [charge], action: Ask}\n"
		must(t, "", chargeAgent(ns, "payments", srv.URL, rules, chargeCall("c1", 5))+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
		first := waitPaused(t, ns, "pay")
		id := first.Status.Approvals[0].ID

		base := startUI(t, "alice", "--port", "0", "-n", ns)
		b := browser(t)
		do(t, b, "alice opens the run", chromedp.Navigate(base), chromedp.Navigate(runURL(base, ns, "pay")),
			chromedp.WaitVisible(chromedp.CSS("#approval-"+id+" textarea[name=reason]")))

		// A namespace editor replaces the run: same name, another call
		// (amount 500) under the same approval ID.
		must(t, "", "", "delete", "agentrun", "pay", "-n", ns, "--wait=true")
		must(t, "", chargeAgent(ns, "payments", srv.URL, rules, chargeCall("c1", 500))+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
		second := waitPaused(t, ns, "pay")
		if second.UID == first.UID || second.Status.Approvals[0].ID != id {
			t.Fatalf("the re-created run: uid %s (was %s), approval %s (was %s); want another run with the same approval ID",
				second.UID, first.UID, second.Status.Approvals[0].ID, id)
		}
		refused(t, b, ns, id, 0)
		if len(srv.requests()) != 0 {
			t.Fatalf("the call ran %d times", len(srv.requests()))
		}
	})

	t.Run("edited under a quorum", func(t *testing.T) {
		ns := namespace(t, "e2e-ui-stale-edit")
		for _, g := range []string{"security", "sre"} {
			must(t, "", "", "create", "rolebinding", g+"-approves", "-n", ns, "--clusterrole=exagent-approver", "--group="+g)
		}
		rules := "    - name: two-person\n      tools: [charge]\n      action: Ask\n" +
			"      quorum: {approvals: 2, groups: [{group: sre, count: 1}, {group: security, count: 1}]}\n"
		must(t, "", chargeAgent(ns, "payments", srv.URL, rules, chargeCall("c1", 5))+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
		id := waitPaused(t, ns, "pay").Status.Approvals[0].ID

		base := startUI(t, "erin", "--port", "0", "-n", ns)
		b := browser(t)
		do(t, b, "erin opens the run", chromedp.Navigate(base), chromedp.Navigate(runURL(base, ns, "pay")),
			chromedp.WaitVisible(chromedp.CSS("#approval-"+id+" textarea[name=reason]")))
		if args := text(t, b, "#approval-"+id+" pre.args"); !strings.Contains(args, `"amount": 5`) {
			t.Fatalf("erin sees %q, want amount 5", args)
		}
		// frank's vote edits the call erin is looking at.
		must(t, "frank", "", "approve", "pay", id, "-n", ns, "--set", "amount=900", "--reason", "sre: 900 it is")
		refused(t, b, ns, id, 1)
		if a := getRun(t, ns, "pay").Status.Approval(id); a == nil || len(a.Votes) != 1 {
			t.Fatalf("after erin's stale click the approval is %+v, want frank's vote alone", a)
		}
	})
}
