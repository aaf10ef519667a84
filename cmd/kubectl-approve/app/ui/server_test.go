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
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// apiserver stands in for the apiserver's HTTP front door only: it
// records the credentials each request carries and answers 403, so a
// test can see whose identity the page used (what the store then does
// with it is the browser tests' job, against a real apiserver).
type apiserver struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newAPIServer(t *testing.T) *apiserver {
	a := &apiserver{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.auths = append(a.auths, r.Header.Get("Authorization"))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden by the test"}`))
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *apiserver) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auths...)
}

// start serves a page configured by edit on 127.0.0.1 and returns it
// with its base URL.
func start(t *testing.T, api *apiserver, edit func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	cfg := &Config{Auth: AuthKubeconfig, Namespace: "team", Decide: noDecide,
		REST: &rest.Config{Host: api.URL, BearerToken: "kubeconfig-token"}}
	ts := httptest.NewUnstartedServer(nil)
	cfg.Address = ts.Listener.Addr().String()
	if edit != nil {
		edit(cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(ts.Close)
	return s, ts
}

func noRedirects(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestTokenIsExchangedForACookie(t *testing.T) {
	api := newAPIServer(t)
	s, ts := start(t, api, nil)
	jar, _ := cookiejar.New(nil)
	c := noRedirects(jar)

	resp, err := c.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token, no cookie: HTTP %d, want 401", resp.StatusCode)
	}
	resp, err = c.Get(ts.URL + "/?token=wrong")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(jar.Cookies(mustURL(t, ts.URL))) != 0 {
		t.Fatalf("a wrong token: HTTP %d with cookies %v, want 401 and none", resp.StatusCode, jar.Cookies(mustURL(t, ts.URL)))
	}

	u := mustURL(t, s.URL(ts.Listener.Addr()))
	u.Path = "/runs/team/r1"
	resp, err = c.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs/team/r1" {
		t.Fatalf("the right token: HTTP %d to %q, want 303 to the same path without the token", resp.StatusCode, resp.Header.Get("Location"))
	}
	set := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %s", set, want)
		}
	}
	// With the cookie the page acts — with the kubeconfig's credentials.
	resp, err = c.Get(ts.URL + "/runs/team/r1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("with the session: HTTP %d, want the apiserver's 403 passed on", resp.StatusCode)
	}
	if got := api.seen(); len(got) == 0 || got[len(got)-1] != "Bearer kubeconfig-token" {
		t.Fatalf("the apiserver saw %q, want the kubeconfig's credentials", got)
	}
	// A forged cookie is no session.
	forged, _ := cookiejar.New(nil)
	forged.SetCookies(mustURL(t, ts.URL), []*http.Cookie{{Name: s.sess.cookieName(), Value: "abc.def"}})
	resp, err = noRedirects(forged).Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a forged cookie: HTTP %d, want 401", resp.StatusCode)
	}
}

func TestHeaders(t *testing.T) {
	api := newAPIServer(t)
	_, ts := start(t, api, nil)
	for _, path := range []string{"/", "/runs/team/r1", "/static/app.js"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Security-Policy"); got != csp {
			t.Errorf("%s: CSP %q, want %q", path, got, csp)
		}
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("%s: %s %q, want %q", path, h, got, want)
			}
		}
		want := "no-store"
		if strings.HasPrefix(path, "/static/") {
			want = "no-cache"
		}
		if got := resp.Header.Get("Cache-Control"); got != want {
			t.Errorf("%s: Cache-Control %q, want %q", path, got, want)
		}
	}
}

func TestRebindingHostIsRefused(t *testing.T) {
	api := newAPIServer(t)
	s, ts := start(t, api, nil)
	req, _ := http.NewRequest(http.MethodGet, s.URL(ts.Listener.Addr()), nil)
	req.Host = "attacker.example:" + mustURL(t, ts.URL).Port()
	resp, err := noRedirects(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("Host attacker.example with the right token: HTTP %d, want 421", resp.StatusCode)
	}
}

// session returns a client holding a session of s.
func session(t *testing.T, s *Server, ts *httptest.Server) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := noRedirects(jar)
	resp, err := c.Get(s.URL(ts.Listener.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var id string
	for _, ck := range jar.Cookies(mustURL(t, ts.URL)) {
		id, _, _ = strings.Cut(ck.Value, ".")
	}
	if id == "" {
		t.Fatal("no session cookie")
	}
	return c, s.sess.csrf(id)
}

func TestPostsAreGuarded(t *testing.T) {
	api := newAPIServer(t)
	var decided []DecideRequest
	s, ts := start(t, api, func(c *Config) {
		c.Decide = func(_ context.Context, _ client.Client, req DecideRequest) (*exagentv1.ApprovalDecision, error) {
			decided = append(decided, req)
			return &exagentv1.ApprovalDecision{ObjectMeta: metav1.ObjectMeta{Name: "r1-approve-abcde"}}, nil
		}
	})
	c, token := session(t, s, ts)
	origin := ts.URL
	tc := map[string]struct {
		csrf, origin, fetchSite, answer string
		want                            int
	}{
		"no CSRF token":            {origin: origin, fetchSite: "same-origin", want: http.StatusForbidden},
		"another session's token":  {csrf: s.sess.csrf("someone-else"), origin: origin, want: http.StatusForbidden},
		"no Origin":                {csrf: token, want: http.StatusForbidden},
		"another port of loopback": {csrf: token, origin: "http://127.0.0.1:1", want: http.StatusForbidden},
		"another site":             {csrf: token, origin: origin, fetchSite: "same-site", want: http.StatusForbidden},
		"an opaque origin":         {csrf: token, origin: "null", fetchSite: "same-origin", want: http.StatusForbidden},
		// Past every guard, the decision is made, and the browser sent
		// to the run page.
		"same origin with the token": {csrf: token, origin: origin, fetchSite: "same-origin", want: http.StatusSeeOther},
		// The largest answer a question takes, every byte percent-encoded
		// (a JSON string of 64 KiB: "/" is sent as %2F).
		"a 64 KiB answer fits":  {csrf: token, origin: origin, fetchSite: "same-origin", answer: strings.Repeat("/", exagentv1.MaxValueBytes-2), want: http.StatusSeeOther},
		"a body past the bound": {csrf: token, origin: origin, fetchSite: "same-origin", answer: strings.Repeat("x", maxFormBytes), want: http.StatusBadRequest},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			before := len(decided)
			form := url.Values{"decision": {"Approve"}, "approval": {"a-1"}, "reason": {"looks right"},
				"runUID": {"uid-1"}, "revision": {"1"}, "payloadHash": {"sha256:x"}}
			if tc.csrf != "" {
				form.Set("csrf", tc.csrf)
			}
			if tc.answer != "" {
				form.Set("decision", "Answer")
				form.Set("action", "Accept")
				form.Set("answer", tc.answer)
			}
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/runs/team/r1/decide", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.fetchSite != "" {
				req.Header.Set("Sec-Fetch-Site", tc.fetchSite)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("HTTP %d, want %d: %.3000s", resp.StatusCode, tc.want, body)
			}
			if n := len(decided) - before; (tc.want == http.StatusSeeOther) != (n == 1) {
				t.Fatalf("%d decisions made, want %v", n, tc.want == http.StatusSeeOther)
			}
		})
	}
}

func TestServerModeActsAsTheBearer(t *testing.T) {
	api := newAPIServer(t)
	_, ts := start(t, api, func(c *Config) { c.Serve, c.Auth = true, AuthBearer })

	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: HTTP %d (WWW-Authenticate %q), want 401 Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if got := api.seen(); len(got) != 0 {
		t.Fatalf("without a token the page still asked the apiserver, with %q", got)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/runs/team/r1", nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := api.seen()
	if len(got) == 0 {
		t.Fatal("the apiserver saw nothing")
	}
	for _, a := range got {
		if a != "Bearer alice-token" {
			t.Fatalf("the apiserver saw %q, want only alice's token (never the kubeconfig's)", got)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// With --port 0 the page answers as the address it was given by the
// system, not as port 0.
func TestPortZeroAnswersAsTheListener(t *testing.T) {
	api := newAPIServer(t)
	cfg := &Config{Address: "127.0.0.1:0", Auth: AuthKubeconfig, Namespace: "team", Decide: noDecide, REST: &rest.Config{Host: api.URL}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	resp, err := noRedirects(nil).Get(s.URL(ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the printed URL: HTTP %d, want 303 (the token exchanged)", resp.StatusCode)
	}
}
