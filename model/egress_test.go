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

package model

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/loop"
)

// countingTransport counts the tries that reach the transport.
type countingTransport struct {
	next  http.RoundTripper
	tries atomic.Int32
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.tries.Add(1)
	return c.next.RoundTrip(req)
}

// loopbackOnly is a client whose policy allows 127.0.0.1 (the test servers'
// address) and nothing else the defaults deny.
func loopbackOnly(t *testing.T) *http.Client {
	t.Helper()
	hc, _ := loopbackClient(t)
	return hc
}

func loopbackClient(t *testing.T) (*http.Client, *countingTransport) {
	t.Helper()
	allow, err := egress.ParseCIDRs("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	ct := &countingTransport{next: egress.NewTransport(egress.TransportOptions{Policy: egress.New(egress.Config{Allow: allow})})}
	return &http.Client{Transport: ct}, ct
}

var oneMessage = loop.ModelRequest{Messages: nil}

// TestOpenAIAnswerOverBound: an endpoint streaming a 1 GiB answer is cut
// at MaxAnswerBytes: the request fails with a *bounded.TooLargeError, the
// connection is dropped there (the server could write no more than the
// bound and the sockets' buffers before it saw the client hang up), and
// the answer is not asked again.
func TestOpenAIAnswerOverBound(t *testing.T) {
	const total = 1 << 30
	const slack = 32 << 20 // both ends' socket buffers, generously
	written := make(chan int64, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","choices":[{"message":{"role":"assistant","content":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		var n int64
		for n < total {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
			http.NewResponseController(w).Flush()
		}
		written <- n
	}))
	t.Cleanup(srv.Close)
	hc, ct := loopbackClient(t)
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Complete(t.Context(), oneMessage)
	if !bounded.IsTooLarge(err) || !strings.Contains(err.Error(), "the model's answer is over the 8 MiB bound") {
		t.Fatalf("err = %v, want the answer over its bound", err)
	}
	if n := <-written; n > MaxAnswerBytes+slack {
		t.Errorf("the server wrote %d MiB before the client hung up, want at most the bound and %d MiB of buffers", n>>20, slack>>20)
	}
	if n := ct.tries.Load(); n != 1 {
		t.Errorf("%d tries, want 1", n)
	}
}

// TestOpenAIRedirect: a model endpoint's redirect is not followed — the
// API key never reaches the Location — and is not retried: the request
// fails naming it.
func TestOpenAIRedirect(t *testing.T) {
	var target atomic.Int32
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	to := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { target.Add(1) }))
	_ = to.Listener.Close()
	to.Listener = l
	to.Start()
	t.Cleanup(to.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	hc, ct := loopbackClient(t)
	hc.CheckRedirect = nil // Go's default policy would follow a 307 with the body
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", APIKey: "sk-secret", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Complete(t.Context(), oneMessage)
	var redirect *RedirectError
	if !errors.As(err, &redirect) || redirect.Status != http.StatusTemporaryRedirect || !strings.Contains(err.Error(), "not followed") {
		t.Fatalf("err = %v, want the 307 named, not followed", err)
	}
	if n := ct.tries.Load(); n != 1 || target.Load() != 0 {
		t.Errorf("%d tries, %d requests at the Location; want 1 and none", n, target.Load())
	}
}

// TestOpenAIEgressDenied: a model endpoint whose name resolves to a denied
// address is refused at dial time, once: a re-send would be refused again.
func TestOpenAIEgressDenied(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ct := &countingTransport{next: egress.NewTransport(egress.TransportOptions{})}
	o, err := NewOpenAI(OpenAIConfig{BaseURL: "http://localhost:" + port + "/v1", Model: "m", HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Complete(t.Context(), oneMessage)
	var denied *egress.DeniedError
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), "is loopback (default deny; allow with --egress-allow-cidrs)") {
		t.Fatalf("err = %v, want the egress refusal", err)
	}
	if n := ct.tries.Load(); n != 1 || hits.Load() != 0 {
		t.Errorf("%d tries, %d requests received; want 1 and none", n, hits.Load())
	}
}
