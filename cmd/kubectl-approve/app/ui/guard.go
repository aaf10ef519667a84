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
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// csp is the page's Content-Security-Policy: nothing but its own script,
// style and images, no inline script or style, no frames, forms posting
// only to itself.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// maxFormBytes bounds a POST's body: a reason, evidence, and an answer
// of up to 64 KiB (MaxValueBytes), which form encoding may triple.
const maxFormBytes = 256 << 10

// secureHeaders sets the headers every response carries. Responses with
// run content are never cached (static assets, embedded and the same for
// everyone, may be revalidated).
func secureHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the page's own form posts, and the origin
	// check could not tell them from another site's. Other sites never
	// see a Referer.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Cache-Control", "no-store")
	}
}

// allowedHost reports whether r's Host header names the address the page
// listens on (local mode): a page of another site whose name was rebound
// to 127.0.0.1 sends its own name, and is not answered.
func allowedHost(r *http.Request, listen string) bool {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		return false
	}
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil || port != lport {
		return false
	}
	return host == lhost || (isLoopback(lhost) && isLoopback(host))
}

// sameOrigin checks a state-changing request: the browser's
// Sec-Fetch-Site, when it sends one, must say same-origin, and Origin must
// be this page's own (scheme and host:port). Another site — or another
// port of 127.0.0.1, which is the same site for cookies — is refused.
func sameOrigin(r *http.Request, tls, proxied bool) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return fmt.Errorf("the request came from another site (Sec-Fetch-Site: %s)", s)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return fmt.Errorf("the request carries no Origin header")
	}
	u, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("the request's Origin %q is not a URL", origin)
	}
	scheme := "http"
	if tls || (proxied && forwardedHTTPS(r)) {
		scheme = "https"
	}
	if u.Scheme != scheme || u.Host != r.Host {
		return fmt.Errorf("the request's Origin %s is not this page's (%s://%s)", origin, scheme, r.Host)
	}
	return nil
}

// forwardedHTTPS tells whether the proxy in front says the browser used
// https (server mode, behind a proxy that terminates TLS; a browser
// cannot set the header on a cross-site request without a preflight the
// page never answers).
func forwardedHTTPS(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// refuse answers with a plain-text refusal a person can read.
func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, msg)
}
