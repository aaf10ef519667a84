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

package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// staticLists is an allow-list a test can change.
type staticLists struct {
	mu sync.Mutex
	m  map[string][]netip.Prefix
}

func (s *staticLists) Allowed(ns string) []netip.Prefix {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[ns]
}

func (s *staticLists) set(ns string, p []netip.Prefix) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[ns] = p
}

// countingServer is a keep-alive server on 127.0.0.1 that counts the
// connections it accepted.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// TestTransportNamespaces: a namespace's allow-list widens that namespace
// only, and a connection dialled under it is never reused for another
// namespace (nor for a request with no namespace), nor once the
// allow-list no longer covers it.
func TestTransportNamespaces(t *testing.T) {
	srv, conns := countingServer(t)
	lists := &staticLists{m: map[string][]netip.Prefix{"team-a": mustCIDRs(t, "127.0.0.1/32")}}
	c := NewClient(TransportOptions{AllowLists: lists})
	a := WithNamespace(t.Context(), "team-a")

	for i := 0; i < 2; i++ {
		if err := get(a, c, srv.URL); err != nil {
			t.Fatalf("team-a, request %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("team-a's two requests used %d connections, want 1 (kept alive)", n)
	}
	for name, ctx := range map[string]context.Context{"team-b": WithNamespace(t.Context(), "team-b"), "no namespace": t.Context()} {
		err := get(ctx, c, srv.URL)
		var denied *DeniedError
		if !errors.As(err, &denied) || !strings.Contains(err.Error(), "is loopback (default deny") {
			t.Errorf("%s: err = %v, want the loopback refusal (team-a's idle connection must not serve it)", name, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want still 1", n)
	}

	lists.set("team-a", nil)
	if err := get(a, c, srv.URL); err == nil || !strings.Contains(err.Error(), "egress denied") {
		t.Errorf("team-a after its allow-list was removed: err = %v, want refused", err)
	}
	lists.set("team-a", mustCIDRs(t, "127.0.0.0/8"))
	if err := get(a, c, srv.URL); err != nil {
		t.Errorf("team-a with a new allow-list: %v", err)
	}
}

// TestTransportBoundsNamespaces: past MaxNamespaces the least recently
// used namespace's pool is dropped, and requests still go through.
func TestTransportBoundsNamespaces(t *testing.T) {
	srv, _ := countingServer(t)
	lists := &staticLists{m: map[string][]netip.Prefix{}}
	names := []string{"a", "b", "c"}
	for _, ns := range names {
		lists.set(ns, mustCIDRs(t, "127.0.0.1/32"))
	}
	tr := NewTransport(TransportOptions{AllowLists: lists, MaxNamespaces: 2})
	c := &http.Client{Transport: tr, CheckRedirect: NoRedirect}
	for _, ns := range append(names, names...) {
		if err := get(WithNamespace(t.Context(), ns), c, srv.URL); err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
	}
	if n := tr.perNS.Len(); n != 2 {
		t.Errorf("%d namespace pools kept, want 2", n)
	}
}

// TestTransportChecksAfterDNS: the URL names a host, the policy is over
// addresses: "localhost" resolves to loopback and is refused at dial
// time, with the rule and the address, before anything is sent.
func TestTransportChecksAfterDNS(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	err := get(t.Context(), NewClient(TransportOptions{}), "http://localhost:"+port+"/")
	var denied *DeniedError
	if !errors.As(err, &denied) {
		t.Fatalf("err = %v, want a *DeniedError", err)
	}
	if !denied.Addr.Addr().IsLoopback() || !strings.Contains(err.Error(), ":"+port+" is loopback (default deny; allow with --egress-allow-cidrs)") {
		t.Errorf("refusal %q: want the resolved loopback address, its port and the rule", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the server saw %d requests, want none", hits.Load())
	}
}

// TestClientFollowsNoRedirect: the first answer is the outcome; the
// redirect's target never sees the request or its headers.
func TestClientFollowsNoRedirect(t *testing.T) {
	var second atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { second.Add(1) }))
	t.Cleanup(target.Close)
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/metadata", http.StatusFound)
	}))
	t.Cleanup(first.Close)
	c := NewClient(TransportOptions{Policy: New(Config{Allow: mustCIDRs(t, "127.0.0.1")})})
	resp, err := c.Get(first.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound || second.Load() != 0 {
		t.Errorf("status %d, target hit %d times; want the 302 itself and no request to the target", resp.StatusCode, second.Load())
	}
	if WithoutRedirects(nil).CheckRedirect == nil || http.DefaultClient.CheckRedirect != nil {
		t.Error("WithoutRedirects must set CheckRedirect on a copy, never on http.DefaultClient")
	}
}

// TestTransportIgnoresProxyEnvironment: a proxy would make the dial-time
// check see only the proxy.
func TestTransportIgnoresProxyEnvironment(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { proxied.Add(1) }))
	t.Cleanup(proxy.Close)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	err := get(t.Context(), NewClient(TransportOptions{Policy: New(Config{Allow: mustCIDRs(t, "127.0.0.1")})}), "http://127.0.0.2:9/")
	if err == nil || !strings.Contains(err.Error(), "egress denied: 127.0.0.2:9 is loopback") {
		t.Errorf("err = %v, want the destination refused at dial (not sent to the proxy)", err)
	}
	if proxied.Load() != 0 {
		t.Errorf("the proxy saw %d requests, want none", proxied.Load())
	}
}
