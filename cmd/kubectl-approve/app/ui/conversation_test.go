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

package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func renderThreadPage(t *testing.T, v threadView) string {
	t.Helper()
	p, err := loadPages()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.byName["conversation"].ExecuteTemplate(&b, "layout", v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pausedTurn is turn 2 of conversation chat, paused on approval a1 with
// the model's words, a tool call and its result before it.
func pausedTurn(payload string) *exagentv1.AgentRun {
	run := pausedRun(`{"amount":5}`, "")
	run.Name = "chat-t2"
	run.Spec.Input = payload
	run.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "chat"}
	run.Spec.RequestedBy = &exagentv1.Actor{Username: payload}
	run.Status.Turn = &exagentv1.TurnStatus{Index: 2, After: "chat-t1", FirstMessage: 3}
	run.Status.History = []exagentv1.Message{
		{Role: exagentv1.RoleSystem, Content: "instructions"},
		{Role: exagentv1.RoleUser, Content: "turn one"},
		{Role: exagentv1.RoleAssistant, Content: "turn one's answer"},
		{Role: exagentv1.RoleUser, Content: payload},
		{Role: exagentv1.RoleAssistant, Content: payload, ToolCalls: []exagentv1.MessageToolCall{{ID: "c1", Name: "charge", Arguments: `{"note":"` + strings.ReplaceAll(payload, `"`, `'`) + `"}`}}},
		{Role: exagentv1.RoleTool, ToolCallID: "c0", Content: payload},
	}
	return run
}

// TestThreadShowsTheTurnsOwnPart: a turn shows who asked what (its
// input, once), then only its own messages — not the earlier turns' its
// transcript starts with — and a turn that has not started shows its
// input alone.
func TestThreadShowsTheTurnsOwnPart(t *testing.T) {
	run := pausedTurn("charge it")
	v := turnOf(context.Background(), nil, run, 2, run.Name, nil)
	if v.Requester != "charge it" || v.Input != "charge it" || !v.Open || !v.Started {
		t.Fatalf("turn %+v", v)
	}
	var got []string
	for _, m := range v.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	if want := []string{"assistant:charge it", "tool:charge it"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("own messages %q, want %q", got, want)
	}
	if v.Messages[0].N != 5 {
		t.Errorf("the first own message is number %d, want 5 (its place in the transcript)", v.Messages[0].N)
	}
	queued := pausedTurn("later")
	queued.Name = "chat-t3"
	queued.Status = exagentv1.AgentRunStatus{Phase: exagentv1.PhaseQueued, Reason: exagentv1.ReasonWaitingForTurn,
		History: []exagentv1.Message{{Role: exagentv1.RoleSystem, Content: "instructions"}, {Role: exagentv1.RoleUser, Content: "later"}}}
	if v := turnOf(context.Background(), nil, queued, 3, "chat-t2", nil); len(v.Messages) != 0 || v.Open || v.Started {
		t.Errorf("a queued turn shows %+v, want its input alone", v)
	}
	// A person's turn has no input message: its people's answer is its
	// first own message.
	person := pausedTurn("go on?")
	person.Status.Turn.Human = true
	person.Status.History = append(person.Status.History[:3], exagentv1.Message{Role: exagentv1.RoleUser, Content: "[oncall] yes"})
	if own := ownMessages(person); len(own.msgs) != 1 || own.msgs[0].Content != "[oncall] yes" {
		t.Errorf("a person's turn shows %+v, want its people's answer", own.msgs)
	}
	// Sealed: the turn's first messages are in segments; the page says
	// how many and shows the tail.
	sealed := pausedTurn("x")
	sealed.Status.Transcript = &exagentv1.TranscriptHead{Head: "h", Segments: 1, Messages: 5}
	sealed.Status.History = sealed.Status.History[4:]
	if own := ownMessages(sealed); own.sealed != 2 || len(own.msgs) != 2 || own.first != 5 {
		t.Errorf("sealed: %+v, want 2 sealed and the 2 in status numbered from 5", own)
	}
}

// TestThreadContentIsEscaped: whatever a person, a model or a tool wrote
// comes out of the thread as text.
func TestThreadContentIsEscaped(t *testing.T) {
	payload := `<script>window.pwned=1</script><img src=x onerror="window.pwned=1"><a href="javascript:window.pwned=1">x</a>`
	run := pausedTurn(payload)
	tv := turnOf(context.Background(), nil, run, 2, run.Name, nil)
	tv.Message = payload
	html := renderThreadPage(t, threadView{Namespace: "ns", Name: "chat", UID: "u", Turns: []turnView{tv}, Total: 1, First: 1, Last: 1,
		CanReply: true, ReplyNote: payload, Reply: replyState{Text: payload}, Flash: &flash{Kind: "error", Text: payload}})
	for _, bad := range []string{"<script>", "<img", `<a href="javascript`} {
		if strings.Contains(html, bad) {
			t.Fatalf("the thread contains %q unescaped", bad)
		}
	}
	if strings.Count(html, "&lt;script&gt;") < 5 {
		t.Fatalf("the payload is not shown as text:\n%s", html)
	}
}

// TestThreadFormsCarryWhatTheyShow: the open turn's cards are the run
// page's — run UID, revision, payload hash — and return to the thread;
// two turns with the same approval ID keep distinct cards; the reply box
// carries the conversation's UID and the session's CSRF token.
func TestThreadFormsCarryWhatTheyShow(t *testing.T) {
	run := pausedTurn("go")
	older := pausedTurn("go")
	older.Name, older.UID = "chat-t1", "uid-0"
	older.Status.Phase = exagentv1.PhaseCancelled
	older.Status.Approvals = nil
	older.Status.Calls = []exagentv1.ToolCall{{ID: "c1", Tool: "charge", State: exagentv1.CallUncertain, PayloadHash: "sha256:u1"}}
	turns := []turnView{turnOf(context.Background(), nil, older, 1, run.Name, nil), turnOf(context.Background(), nil, run, 2, run.Name, nil)}
	html := renderThreadPage(t, threadView{base: base{CSRF: "tok"}, Namespace: "ns", Name: "chat", UID: "conv-uid", Turns: turns,
		Total: 2, First: 1, Last: 2, CanReply: true})
	forms := strings.Split(html, "<form ")[1:]
	if len(forms) != 4 {
		t.Fatalf("%d forms, want 4 (turn 1's resolve, turn 2's approval and question, the reply)", len(forms))
	}
	want := []map[string]string{
		{"runUID": "uid-0", "revision": "2", "payloadHash": "sha256:u1", "conversation": "chat", "csrf": "tok"},
		{"runUID": "uid-1", "revision": "2", "payloadHash": "sha256:c1", "conversation": "chat", "csrf": "tok"},
		{"runUID": "uid-1", "revision": "2", "payloadHash": "sha256:q1", "conversation": "chat", "csrf": "tok"},
		{"conversationUID": "conv-uid", "csrf": "tok"},
	}
	for i, f := range forms {
		for name, value := range want[i] {
			if field := fmt.Sprintf(`name=%q value=%q`, name, value); !strings.Contains(f, field) {
				t.Errorf("form %d lacks %s:\n%s", i, field, f)
			}
		}
	}
	for _, id := range []string{`id="t1-call-c1"`, `id="t2-approval-a1"`, `id="t2-approval-q1"`, `action="/conversations/ns/chat/say"`} {
		if strings.Count(html, id) != 1 {
			t.Errorf("%s appears %d times, want once", id, strings.Count(html, id))
		}
	}
}

// TestThreadWindow: a long conversation shows maxThreadTurns, the latest
// by default, with links to the pages around it.
func TestThreadWindow(t *testing.T) {
	tc := map[string]struct {
		total                       int
		until                       string
		first, last, earlier, later int
	}{
		"empty":           {},
		"short":           {total: 3, first: 1, last: 3},
		"latest":          {total: 45, first: 26, last: 45, earlier: 25},
		"an earlier page": {total: 45, until: "25", first: 6, last: 25, earlier: 5, later: 45},
		"the first page":  {total: 45, until: "5", first: 1, last: 5, later: 25},
		"not a number":    {total: 45, until: "x", first: 26, last: 45, earlier: 25},
		"past the end":    {total: 45, until: "99", first: 26, last: 45, earlier: 25},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			v := threadView{Total: tc.total}
			v.window(tc.until)
			if v.First != tc.first || v.Last != tc.last || v.Earlier != tc.earlier || v.Later != tc.later {
				t.Fatalf("window %d..%d (earlier %d, later %d), want %d..%d (%d, %d)", v.First, v.Last, v.Earlier, v.Later,
					tc.first, tc.last, tc.earlier, tc.later)
			}
		})
	}
}

// post sends form to path with the session's token and the page's own
// origin, and returns the answer.
func post(t *testing.T, c *http.Client, base, path string, form url.Values, origin string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

// TestReplyIsGuarded: the reply box's POST passes the page's guard — the
// session's CSRF token, the page's own origin — before anything is sent;
// one that does not say which conversation it showed, or says nothing,
// is refused by the page; past that, the turn is asked of the apiserver
// with the person's credentials alone, and its refusal is shown with the
// apiserver's words, the text kept.
func TestReplyIsGuarded(t *testing.T) {
	api := newAPIServer(t)
	s, ts := start(t, api, nil)
	c, token := session(t, s, ts)
	ok := url.Values{"csrf": {token}, "conversationUID": {"uid-1"}, "text": {"and once more"}}
	with := func(edit func(url.Values)) url.Values {
		f := url.Values{}
		for k, v := range ok {
			f[k] = append([]string(nil), v...)
		}
		edit(f)
		return f
	}
	tc := map[string]struct {
		form     url.Values
		origin   string
		want     int
		wantBody string
		asked    bool
	}{
		"no CSRF token":            {form: with(func(f url.Values) { f.Del("csrf") }), origin: ts.URL, want: http.StatusForbidden, wantBody: "CSRF"},
		"another session's token":  {form: with(func(f url.Values) { f.Set("csrf", s.sess.csrf("other")) }), origin: ts.URL, want: http.StatusForbidden},
		"no Origin":                {form: ok, want: http.StatusForbidden, wantBody: "no Origin"},
		"another port of loopback": {form: ok, origin: "http://127.0.0.1:1", want: http.StatusForbidden},
		"no conversation UID": {form: with(func(f url.Values) { f.Del("conversationUID") }), origin: ts.URL, want: http.StatusConflict,
			wantBody: "the conversation changed since you looked", asked: true},
		"nothing said": {form: with(func(f url.Values) { f.Set("text", "  ") }), origin: ts.URL, want: http.StatusUnprocessableEntity,
			wantBody: "Write what to say", asked: true},
		// Past the page's checks, the apiserver answers (the stand-in
		// refuses everything) and its words are shown.
		"the apiserver refuses": {form: ok, origin: ts.URL, want: http.StatusForbidden, wantBody: "forbidden by the test", asked: true},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			before := len(api.seen())
			code, _, body := post(t, c, ts.URL, "/conversations/team/chat/say", tc.form, tc.origin)
			if code != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Fatalf("HTTP %d, want %d with %q:\n%.3000s", code, tc.want, tc.wantBody, body)
			}
			if asked := len(api.seen()) > before; asked != tc.asked {
				t.Fatalf("the apiserver was asked: %v, want %v", asked, tc.asked)
			}
			for _, a := range api.seen()[before:] {
				if a != "Bearer kubeconfig-token" {
					t.Fatalf("the apiserver saw %q, want only the person's credentials", a)
				}
			}
		})
	}
}

// TestDecisionOnAThreadReturnsToIt: a card on a thread sends the person
// back to the thread, at the turn, with the decision to read back; a
// conversation field that is not a name is refused before anything is
// sent.
func TestDecisionOnAThreadReturnsToIt(t *testing.T) {
	api := newAPIServer(t)
	var decided []DecideRequest
	s, ts := start(t, api, func(c *Config) {
		c.Decide = func(_ context.Context, _ client.Client, req DecideRequest) (*exagentv1.ApprovalDecision, error) {
			decided = append(decided, req)
			return &exagentv1.ApprovalDecision{ObjectMeta: metav1.ObjectMeta{Name: "chat-t2-approve-abcde"}}, nil
		}
	})
	c, token := session(t, s, ts)
	form := url.Values{"csrf": {token}, "decision": {"Approve"}, "approval": {"a1"}, "reason": {"ok"},
		"runUID": {"uid-1"}, "revision": {"2"}, "payloadHash": {"sha256:c1"}, "conversation": {"chat"}}
	code, location, body := post(t, c, ts.URL, "/runs/team/chat-t2/decide", form, ts.URL)
	if code != http.StatusSeeOther || location != "/conversations/team/chat?decided=chat-t2-approve-abcde#turn-chat-t2" {
		t.Fatalf("HTTP %d to %q, want 303 to the thread at the turn:\n%.2000s", code, location, body)
	}
	form.Set("conversation", "//evil.example/x")
	code, location, _ = post(t, c, ts.URL, "/runs/team/chat-t2/decide", form, ts.URL)
	if code != http.StatusBadRequest || location != "" || len(decided) != 1 {
		t.Fatalf("a conversation that is not a name: HTTP %d to %q, %d decisions; want 400 and none more", code, location, len(decided)-1)
	}
}
