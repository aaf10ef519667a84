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
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// bigArgs is a call's arguments of about 10 KiB, its last key past the
// inbox's 4 KiB.
func bigArgs() string {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 400 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"item-%04d-xxxxxxxxxx"`, i)
	}
	b.WriteString(`],"the_last_key":"is-read-too"}`)
	return b.String()
}

// pausedRun waits on approval a1 (call c1 with args) and on question q1,
// which sends the person to url.
func pausedRun(args, questionURL string) *exagentv1.AgentRun {
	now := metav1.Now()
	return &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "uid-1"},
		Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}},
		Status: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseAwaitingApproval, Revision: 2,
			Calls: []exagentv1.ToolCall{
				{ID: "c1", Tool: "charge", Args: args, State: exagentv1.CallPending, PayloadHash: "sha256:c1"},
				{ID: "c2", Tool: "login", Args: `{}`, State: exagentv1.CallPending, PayloadHash: "sha256:c2"},
			},
			Approvals: []exagentv1.Approval{
				{ID: "a1", CallID: "c1", PayloadHash: "sha256:c1", Revision: 2, State: exagentv1.ApprovalPending, RequestedAt: now},
				{ID: "q1", CallID: "c2", PayloadHash: "sha256:q1", Revision: 2, State: exagentv1.ApprovalPending, RequestedAt: now, Kind: exagentv1.KindQuestion,
					Question: &exagentv1.Question{Text: "Sign in to continue", URL: questionURL, Schema: `{"type":"string"}`}},
			}}}
}

func renderRunPage(t *testing.T, v runView) string {
	t.Helper()
	p, err := loadPages()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.byName["run"].ExecuteTemplate(&b, "layout", v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRunPageShowsTheWholeCall: the run page, where a person decides,
// shows a call's arguments whole; the inbox shows the first 4 KiB and
// says how much there is.
func TestRunPageShowsTheWholeCall(t *testing.T) {
	run := pausedRun(bigArgs(), "")
	inbox := rowsOf(run, nil)
	if !strings.Contains(inbox[0].Args, "bytes; the first 4 KiB are shown") || strings.Contains(inbox[0].Args, "the_last_key") {
		t.Errorf("the inbox row's arguments end %q, want the first 4 KiB and the size", inbox[0].Args[len(inbox[0].Args)-80:])
	}
	rows := wholeRows(run, rowsOf(run, nil), nil)
	html := renderRunPage(t, runView{Namespace: "ns", Name: "r", RunUID: "uid-1", Revision: 2, Pending: rows,
		Transcript: transcriptView{Latest: true}})
	if !strings.Contains(html, `&#34;the_last_key&#34;: &#34;is-read-too&#34;`) || !strings.Contains(html, "item-0399") {
		t.Fatal("the run page does not show the call's arguments whole")
	}
}

// TestURLQuestionShowsWhereItSends: a question that sends the person to a
// URL (MCP elicitation, URL mode) shows the URL and, prominently, its
// origin; a URL that is not http(s) is text, never a link.
func TestURLQuestionShowsWhereItSends(t *testing.T) {
	p, err := loadPages()
	if err != nil {
		t.Fatal(err)
	}
	tc := map[string]struct {
		url, want, wantNot string
	}{
		"https": {url: "https://login.example.com:8443/device?code=X1",
			want: `<strong class="origin">https://login.example.com:8443</strong>`},
		"not http(s)": {url: "javascript:alert(1)", want: `<code class="url">javascript:alert(1)</code>`, wantNot: `href="javascript`},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			rows := rowsOf(pausedRun(`{}`, tc.url), nil)
			if len(rows) != 2 || rows[1].Question == nil {
				t.Fatalf("rows %+v", rows)
			}
			for _, page := range []string{"inbox", "run"} {
				html, err := p.fragment(page, "asked", rows[1])
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(html, "It sends you to:") || !strings.Contains(html, tc.want) {
					t.Errorf("%s: the question lacks %s:\n%s", page, tc.want, html)
				}
				if tc.wantNot != "" && strings.Contains(html, tc.wantNot) {
					t.Errorf("%s: the question has %s:\n%s", page, tc.wantNot, html)
				}
			}
		})
	}
}

// TestRunPageFormsCarryWhatTheyShow: every decision form — approve and
// deny, answer, resolve — carries the run UID, revision and payload hash
// of the call the page rendered.
func TestRunPageFormsCarryWhatTheyShow(t *testing.T) {
	run := pausedRun(`{"amount":5}`, "")
	html := renderRunPage(t, runView{Namespace: "ns", Name: "r", RunUID: "uid-1", Revision: 7,
		Pending:    wholeRows(run, rowsOf(run, nil), nil),
		Uncertain:  []callView{{ID: "c9", Tool: "charge", PayloadHash: "sha256:c9"}},
		Transcript: transcriptView{Latest: true}})
	forms := strings.Split(html, "<form ")[1:]
	if len(forms) != 3 {
		t.Fatalf("%d forms, want 3 (approval, question, uncertain call)", len(forms))
	}
	want := [][3]string{{"uid-1", "2", "sha256:c1"}, {"uid-1", "2", "sha256:q1"}, {"uid-1", "7", "sha256:c9"}}
	for i, f := range forms {
		for k, name := range []string{"runUID", "revision", "payloadHash"} {
			if field := fmt.Sprintf(`name=%q value=%q`, name, want[i][k]); !strings.Contains(f, field) {
				t.Errorf("form %d lacks %s:\n%s", i, field, f)
			}
		}
	}
}

// TestStaleFormIsRefused: a form whose call the run no longer holds (the
// Decider says ErrCallChanged), or a form that does not say what it
// showed, is answered 409 with the page's words, and the second never
// reaches the Decider.
func TestStaleFormIsRefused(t *testing.T) {
	api := newAPIServer(t)
	var decided []DecideRequest
	s, ts := start(t, api, func(c *Config) {
		c.Decide = func(_ context.Context, _ client.Client, req DecideRequest) (*exagentv1.ApprovalDecision, error) {
			decided = append(decided, req)
			return nil, fmt.Errorf("%w (the page showed run uid %s)", ErrCallChanged, req.Seen.RunUID)
		}
	})
	c, token := session(t, s, ts)
	post := func(form url.Values) (int, string) {
		t.Helper()
		form.Set("csrf", token)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/runs/team/r1/decide", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", ts.URL)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := post(url.Values{"decision": {"Approve"}, "approval": {"a-1"}, "reason": {"ok"},
		"runUID": {"uid-old"}, "revision": {"1"}, "payloadHash": {"sha256:x"}})
	if code != http.StatusConflict || !strings.Contains(body, "the call changed since you looked: reload") {
		t.Fatalf("a stale form: HTTP %d, want 409 with the refusal:\n%.2000s", code, body)
	}
	if len(decided) != 1 || (decided[0].Seen != Seen{RunUID: "uid-old", Revision: 1, PayloadHash: "sha256:x"}) {
		t.Fatalf("the Decider got %+v, want the form's run UID, revision and payload hash", decided)
	}
	code, body = post(url.Values{"decision": {"Approve"}, "approval": {"a-1"}, "reason": {"ok"}})
	if code != http.StatusConflict || !strings.Contains(body, "the call changed since you looked: reload") || len(decided) != 1 {
		t.Fatalf("a form that does not say what it showed: HTTP %d, %d decisions, want 409 and none:\n%.2000s", code, len(decided)-1, body)
	}
}

// TestTokenStartsOneSession: the printed URL's token starts one session;
// the same URL opened again (another browser, a leaked copy) starts none.
func TestTokenStartsOneSession(t *testing.T) {
	api := newAPIServer(t)
	s, ts := start(t, api, nil)
	first, _ := cookiejar.New(nil)
	resp, err := noRedirects(first).Get(s.URL(ts.Listener.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the token's first use: HTTP %d, want 303", resp.StatusCode)
	}
	second, _ := cookiejar.New(nil)
	resp, err = noRedirects(second).Get(s.URL(ts.Listener.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(second.Cookies(mustURL(t, ts.URL))) != 0 ||
		!strings.Contains(string(body), "already started a session") {
		t.Fatalf("the token's second use: HTTP %d, cookies %v, %q; want 401 and none", resp.StatusCode, second.Cookies(mustURL(t, ts.URL)), body)
	}
}

// TestSessionExpires: a session lasts its lifetime — the cookie says so
// to the browser, and the page refuses it afterwards by itself.
func TestSessionExpires(t *testing.T) {
	api := newAPIServer(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, ts := start(t, api, func(c *Config) { c.Clock, c.SessionLifetime = clk, time.Hour })
	jar, _ := cookiejar.New(nil)
	c := noRedirects(jar)
	resp, err := c.Get(s.URL(ts.Listener.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if set := resp.Header.Get("Set-Cookie"); !strings.Contains(set, "Max-Age=3600") {
		t.Errorf("Set-Cookie %q, want Max-Age=3600", set)
	}
	status := func() int {
		t.Helper()
		resp, err := c.Get(ts.URL + "/runs/team/r1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	clk.Step(59 * time.Minute)
	if got := status(); got != http.StatusForbidden { // the stand-in apiserver's answer: the session held
		t.Fatalf("within the lifetime: HTTP %d, want the apiserver's 403", got)
	}
	clk.Step(time.Minute)
	if got := status(); got != http.StatusUnauthorized {
		t.Fatalf("at the end of the lifetime: HTTP %d, want 401", got)
	}
}

// TestCookieNamesCarryThePort: two pages on two ports of 127.0.0.1 — one
// host for cookies — keep two sessions in one browser; neither's cookie
// replaces or opens the other's.
func TestCookieNamesCarryThePort(t *testing.T) {
	api := newAPIServer(t)
	a, tsA := start(t, api, nil)
	b, tsB := start(t, api, nil)
	if a.sess.cookieName() == b.sess.cookieName() || !strings.HasSuffix(a.sess.cookieName(), "-"+mustURL(t, tsA.URL).Port()) {
		t.Fatalf("cookie names %q and %q, want each ending with its port", a.sess.cookieName(), b.sess.cookieName())
	}
	jar, _ := cookiejar.New(nil)
	c := noRedirects(jar)
	for _, u := range []string{a.URL(tsA.Listener.Addr()), b.URL(tsB.Listener.Addr())} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, ts := range []string{tsA.URL, tsB.URL} {
		resp, err := c.Get(ts + "/runs/team/r1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s after both sessions started: HTTP %d, want the apiserver's 403 (its session kept)", ts, resp.StatusCode)
		}
	}
}
