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
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

type namespaceKey struct{}

// WithNamespace marks ctx's requests as made for a run (or a delivery) of
// namespace: the transport applies that namespace's allow-list.
func WithNamespace(ctx context.Context, namespace string) context.Context {
	if namespace == "" {
		return ctx
	}
	return context.WithValue(ctx, namespaceKey{}, namespace)
}

// NamespaceFrom is the namespace WithNamespace put on ctx, or "".
func NamespaceFrom(ctx context.Context) string {
	ns, _ := ctx.Value(namespaceKey{}).(string)
	return ns
}

// AllowLists widen the policy for one namespace. They are the platform
// team's (a ConfigMap in the manager's own namespace, see
// ConfigMapAllowLists), never a tenant's.
type AllowLists interface {
	// Allowed returns the ranges namespace may reach beyond the policy
	// (nil: none).
	Allowed(namespace string) []netip.Prefix
}

// NoRedirect is every outbound client's CheckRedirect: a redirect is never
// followed. The first answer is the call's outcome: following would re-send
// Secret-valued headers to wherever the Location points and turn a POST
// into a GET.
func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// defaultClient is the client of a caller that passes none: the default
// policy, no redirects. Built once, so its connections are reused.
var defaultClient = sync.OnceValue(func() *http.Client { return NewClient(TransportOptions{}) })

// DefaultTransport is the transport of a caller that passes no client:
// every dial checked against the default policy (nothing allowed).
func DefaultTransport() http.RoundTripper { return defaultClient().Transport }

// WithoutRedirects returns a copy of c whose CheckRedirect is NoRedirect,
// sharing its transport; when c is nil, a copy of the default-policy
// client (never Go's http.DefaultClient, which no policy checks).
func WithoutRedirects(c *http.Client) *http.Client {
	if c == nil {
		c = defaultClient()
	}
	cp := *c
	cp.CheckRedirect = NoRedirect
	return &cp
}

// TransportOptions size a Transport.
type TransportOptions struct {
	// Policy checks every dialled address; Default() when nil.
	Policy *Policy
	// AllowLists widen Policy per namespace; none when nil.
	AllowLists AllowLists
	// MaxIdleConns and MaxIdleConnsPerHost of each underlying transport
	// (Go's defaults when zero).
	MaxIdleConns        int
	MaxIdleConnsPerHost int
	// MaxNamespaces bounds the namespaces with a transport of their own
	// (DefaultMaxNamespaces when zero); the least recently used one is
	// dropped, its idle connections closed.
	MaxNamespaces int
	// TLS is the TLS client configuration of every underlying transport
	// (Go's default — the system's roots — when nil); see WithTLS.
	TLS *tls.Config
}

// DefaultMaxNamespaces bounds the per-namespace transports.
const DefaultMaxNamespaces = 64

// MaxResponseHeaderBytes bounds a response's headers (Go's default is 10 MiB).
const MaxResponseHeaderBytes = 1 << 20

// Transport is the manager's outbound http.RoundTripper. Each request is
// dialled under the policy of the namespace on its context: a namespace
// with an allow-list gets a transport (and so a connection pool) of its
// own, so a connection dialled under one namespace's wider policy is never
// reused for another. Environment proxies (HTTP_PROXY, HTTPS_PROXY) are
// not used: through a proxy the dial-time check would see only the proxy,
// and the proxy would reach whatever the tenant named.
type Transport struct {
	opts TransportOptions
	base *http.Transport

	mu    sync.Mutex
	perNS *lru.Cache[string, *nsTransport]
}

type nsTransport struct {
	key string // the allow-list it was built for
	t   *http.Transport
}

// NewTransport builds the transport.
func NewTransport(o TransportOptions) *Transport {
	if o.Policy == nil {
		o.Policy = Default()
	}
	if o.MaxNamespaces <= 0 {
		o.MaxNamespaces = DefaultMaxNamespaces
	}
	t := &Transport{opts: o, base: o.httpTransport(o.Policy)}
	t.perNS, _ = lru.NewWithEvict(o.MaxNamespaces, func(_ string, v *nsTransport) { v.t.CloseIdleConnections() })
	return t
}

// NewClient is a client over a new Transport that follows no redirect.
func NewClient(o TransportOptions) *http.Client {
	return &http.Client{Transport: NewTransport(o), CheckRedirect: NoRedirect}
}

// WithTLS returns a new Transport with t's policy, allow-lists and sizes
// whose connections use cfg (a model's own CA bundle): its dials are
// checked exactly as t's, and it pools its connections apart from t's, so
// a connection verified against one trust store is never reused for
// another.
func (t *Transport) WithTLS(cfg *tls.Config) *Transport {
	o := t.opts
	o.TLS = cfg
	return NewTransport(o)
}

// Policy is the policy of requests with no namespace allow-list.
func (t *Transport) Policy() *Policy { return t.opts.Policy }

// httpTransport is Go's default transport with the policy's dialer and no proxy.
func (o TransportOptions) httpTransport(p *Policy) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: p.ControlContext}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = d.DialContext
	t.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	if o.TLS != nil {
		t.TLSClientConfig = o.TLS.Clone()
	}
	if o.MaxIdleConns > 0 {
		t.MaxIdleConns = o.MaxIdleConns
	}
	if o.MaxIdleConnsPerHost > 0 {
		t.MaxIdleConnsPerHost = o.MaxIdleConnsPerHost
	}
	return t
}

// RoundTrip sends req through the transport of its namespace.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.transportFor(NamespaceFrom(req.Context())).RoundTrip(req)
}

func (t *Transport) transportFor(ns string) *http.Transport {
	if ns == "" || t.opts.AllowLists == nil {
		return t.base
	}
	allow := t.opts.AllowLists.Allowed(ns)
	if len(allow) == 0 {
		return t.base
	}
	key := String(canonical(allow))
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.perNS.Get(ns); ok {
		if cur.key == key {
			return cur.t
		}
		// The allow-list changed: the old pool's connections may reach
		// what the new one no longer allows.
		cur.t.CloseIdleConnections()
	}
	n := &nsTransport{key: key, t: t.opts.httpTransport(t.opts.Policy.Widen(allow))}
	t.perNS.Add(ns, n)
	return n.t
}

// CloseIdleConnections closes the idle connections of every pool.
func (t *Transport) CloseIdleConnections() {
	t.base.CloseIdleConnections()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ns := range t.perNS.Keys() {
		if v, ok := t.perNS.Peek(ns); ok {
			v.t.CloseIdleConnections()
		}
	}
}
