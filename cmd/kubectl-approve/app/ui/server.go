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
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxStreams bounds the live inbox streams open at once: each holds a
// watch on the apiserver.
const maxStreams = 64

// Server is the approver's page.
type Server struct {
	cfg     *Config
	id      *identity
	sess    *sessions
	pages   *pages
	streams chan struct{}
	mux     *http.ServeMux
	// addr is the address the page answers as: the configured one, or
	// the listener's once Serve knows it (--port 0).
	addr string
	// localWho is the kubeconfig's person (local mode), asked once.
	localWho struct {
		mu   sync.Mutex
		name string
	}
}

// New checks cfg and builds the page.
func New(cfg *Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DecisionTimeout <= 0 {
		cfg.DecisionTimeout = time.Minute
	}
	id, err := newIdentity(cfg)
	if err != nil {
		return nil, err
	}
	sess, err := newSessions(cfg.TLSCert != "", cfg.SessionLifetime, cfg.Clock)
	if err != nil {
		return nil, err
	}
	sess.setAddress(cfg.Address)
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, id: id, sess: sess, pages: p, streams: make(chan struct{}, maxStreams), mux: http.NewServeMux(), addr: cfg.Address}
	s.routes()
	return s, nil
}

// request is what a handler of an authenticated request gets.
type request struct {
	w http.ResponseWriter
	r *http.Request
	c client.WithWatch
	// session identifies the person's session (CSRF tokens bind it).
	session string
	// whoName is the person the apiserver sees, once asked (who).
	whoName string
	whoDone bool
}

func (s *Server) routes() {
	s.mux.Handle("GET /static/", staticHandler())
	s.mux.HandleFunc("GET /{$}", s.authed(s.inbox))
	s.mux.HandleFunc("GET /events", s.authed(s.events))
	s.mux.HandleFunc("GET /runs/{namespace}/{name}", s.authed(s.runPage))
	s.mux.HandleFunc("POST /runs/{namespace}/{name}/decide", s.authed(s.decide))
	s.mux.HandleFunc("GET /conversations/{namespace}/{name}", s.authed(s.conversationPage))
	s.mux.HandleFunc("POST /conversations/{namespace}/{name}/say", s.authed(s.say))
}

// ServeHTTP answers every request with the security headers, after the
// local-mode Host check.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w, r)
	if !s.cfg.Serve && !allowedHost(r, s.addr) {
		refuse(w, http.StatusMisdirectedRequest, fmt.Sprintf("This page answers only as %s: the Host %q is another name.", s.addr, r.Host))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authed authenticates the request (the session cookie, or in server mode
// the bearer token), checks a POST's origin and CSRF token, and hands the
// person's own client to h.
func (s *Server) authed(h func(*request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := &request{w: w, r: r}
		if s.cfg.Serve {
			token, ok := bearerToken(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="kubectl approve ui"`)
				refuse(w, http.StatusUnauthorized, errNoToken.Error())
				return
			}
			q.session = bearerSession(token)
		} else {
			if r.Method == http.MethodGet && s.sess.exchange(w, r) {
				return
			}
			id, ok := s.sess.session(r)
			if !ok {
				refuse(w, http.StatusUnauthorized, "No session, or it has expired: open the URL kubectl approve ui printed when it started "+
					"(its token starts one session, in one browser); once used or expired, restart kubectl approve ui for a new one.")
				return
			}
			q.session = id
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := sameOrigin(r, s.cfg.TLSCert != "", s.cfg.Serve); err != nil {
				refuse(w, http.StatusForbidden, "Refused: "+err.Error()+". Decisions are taken only from this page itself.")
				return
			}
			if err := r.ParseForm(); err != nil {
				refuse(w, http.StatusBadRequest, "Refused: the form could not be read: "+err.Error())
				return
			}
			if !s.sess.checkCSRF(q.session, r.PostForm.Get("csrf")) {
				refuse(w, http.StatusForbidden, "Refused: the form does not carry this session's CSRF token. Reload the page and decide again.")
				return
			}
		}
		c, err := s.id.clientFor(r)
		if err != nil {
			refuse(w, http.StatusUnauthorized, err.Error())
			return
		}
		q.c = c
		h(q)
	}
}

// URL is the address a person opens: with the per-start token in local
// mode, the bare address in server mode.
func (s *Server) URL(addr net.Addr) string {
	u := url.URL{Scheme: "http", Host: addr.String(), Path: "/"}
	if s.cfg.TLSCert != "" {
		u.Scheme = "https"
	}
	if !s.cfg.Serve {
		u.RawQuery = url.Values{tokenParam: {s.sess.token}}.Encode()
	}
	return u.String()
}

// Listen opens the configured address.
func (s *Server) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", s.cfg.Address, err)
	}
	return ln, nil
}

// Serve answers on ln until ctx ends, then shuts down (open event streams
// end with their requests' contexts).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.addr = ln.Addr().String()
	s.sess.setAddress(s.addr)
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if s.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("loading --tls-cert and --tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
