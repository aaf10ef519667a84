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
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// sessions guards local mode: the URL the plugin prints carries a random
// per-start token; a visit with it gets a session cookie (HttpOnly,
// SameSite=Strict) and is redirected to the same page without it, so the
// token does not stay in the address bar, the history or a Referer.
// The token starts one session only: a copy of the URL that leaks later
// (a shell history, a screen share, a proxy's log) starts none. A session
// lasts its lifetime, then the person opens a new URL (restart the
// plugin). Sessions are stateless: a cookie is a random id, its expiry and
// their HMAC under a key that lives only in this process, so a restart
// ends every session.
//
// The cookie's name carries the port: two pages on two ports of
// 127.0.0.1 — the same host for cookies, which ignore ports — each keep
// their own session instead of overwriting the other's.
//
// The CSRF token of a session is another HMAC of its id. In server mode
// there is no cookie of ours: the session id is the hash of the request's
// bearer token, so the CSRF token binds the person the proxy vouches for.
type sessions struct {
	key      []byte
	token    string
	secure   bool
	lifetime time.Duration
	clock    clock.PassiveClock

	mu sync.Mutex
	// used says the token started a session: it starts no other.
	used bool
	// port is the port the page answers on (cookieName).
	port string
}

// tokenParam is the query parameter of the per-start token.
const tokenParam = "token"

func newSessions(secure bool, lifetime time.Duration, clk clock.PassiveClock) (*sessions, error) {
	key := make([]byte, 32)
	tok := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating the session key: %w", err)
	}
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("generating the token: %w", err)
	}
	if lifetime <= 0 {
		lifetime = DefaultSessionLifetime
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &sessions{key: key, token: base64.RawURLEncoding.EncodeToString(tok), secure: secure, lifetime: lifetime, clock: clk}, nil
}

// setAddress records the address the page answers on: its port names
// the cookie.
func (s *sessions) setAddress(addr string) {
	_, port, _ := net.SplitHostPort(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.port = port
}

// cookieName is "exagent-ui-PORT", __Host- prefixed under TLS (the
// browser then refuses it from any other origin's Set-Cookie).
func (s *sessions) cookieName() string {
	s.mu.Lock()
	name := "exagent-ui-" + s.port
	s.mu.Unlock()
	if s.secure {
		return "__Host-" + name
	}
	return name
}

func (s *sessions) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// exchange handles a request carrying ?token=: the right token, the
// first time, sets a new session cookie and redirects to the URL without
// it; from a browser that already holds a session it only redirects; a
// wrong one, or the right one again from anyone else, is refused. It reports
// whether it answered the request.
func (s *sessions) exchange(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if !q.Has(tokenParam) {
		return false
	}
	if subtle.ConstantTimeCompare([]byte(q.Get(tokenParam)), []byte(s.token)) != 1 {
		refuse(w, http.StatusUnauthorized, "This link's token is not the one kubectl approve ui printed when it started (it changes at every start). Open the URL it printed last.")
		return true
	}
	q.Del(tokenParam)
	clean := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	if _, ok := s.session(r); ok {
		// The browser that holds a session opens the printed link again
		// (a second tab from the terminal): it needs no new session.
		http.Redirect(w, r, clean.String(), http.StatusSeeOther)
		return true
	}
	s.mu.Lock()
	used := s.used
	s.used = true
	s.mu.Unlock()
	if used {
		refuse(w, http.StatusUnauthorized, "This link's token has already started a session, and it starts only one: use the browser that opened it first, "+
			"or restart kubectl approve ui for a new link.")
		return true
	}
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		refuse(w, http.StatusInternalServerError, "Could not start a session: "+err.Error())
		return true
	}
	id := base64.RawURLEncoding.EncodeToString(raw)
	expires := s.clock.Now().Add(s.lifetime).Truncate(time.Second)
	exp := strconv.FormatInt(expires.Unix(), 10)
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: id + "." + exp + "." + s.mac("session", id, exp), Path: "/",
		Expires: expires, MaxAge: int(s.lifetime / time.Second), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, clean.String(), http.StatusSeeOther)
	return true
}

// session returns the session id of r's cookie, when it is one of ours
// and has not expired (the browser drops it then too; the check here
// does not depend on the browser).
func (s *sessions) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(s.cookieName())
	if err != nil {
		return "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 || parts[0] == "" {
		return "", false
	}
	id, exp, sig := parts[0], parts[1], parts[2]
	if !hmac.Equal([]byte(sig), []byte(s.mac("session", id, exp))) {
		return "", false
	}
	until, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !s.clock.Now().Before(time.Unix(until, 0)) {
		return "", false
	}
	return id, true
}

// bearerSession is server mode's session id: the hash of the token.
func bearerSession(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// csrf is the CSRF token of session id.
func (s *sessions) csrf(id string) string { return s.mac("csrf", id) }

// checkCSRF reports whether got is session id's CSRF token.
func (s *sessions) checkCSRF(id, got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf(id)))
}
