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

package tools

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/exagent-io/exagent/loop"
)

// journal records every request a test server receives.
type journal struct {
	mu   sync.Mutex
	keys []string
}

func (j *journal) add(k string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.keys = append(j.keys, k)
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.keys...)
}

// TestHTTPContract checks the http tool's classification over real HTTP:
// 2xx succeeded, other status failed with an excerpt, a refused connection
// failed cleanly, a connection broken after the request was sent unknown —
// or re-sent with the same key when the tool is idempotent.
func TestHTTPContract(t *testing.T) {
	call := Call{ToolInvocation: loop.ToolInvocation{CallID: "c1", Tool: "t", Args: json.RawMessage(`{"a":1}`), IdempotencyKey: "uid/c1"},
		RunNamespace: "ns", RunName: "r"}
	tests := map[string]struct {
		// handler answers the n-th request (0-based); nil means a refused connection.
		handler    func(n int, w http.ResponseWriter, r *http.Request)
		idempotent bool
		wantKind   loop.ResultKind
		wantOutput string
		wantKeys   []string
	}{
		"2xx succeeds with the body": {
			handler:  func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"id":7}`)) },
			wantKind: loop.ResultSucceeded, wantOutput: `{"id":7}`, wantKeys: []string{"uid/c1"},
		},
		"non-2xx fails with an excerpt": {
			handler: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusConflict)
				_, _ = w.Write([]byte("already refunded"))
			},
			wantKind: loop.ResultFailed, wantOutput: "HTTP 409: already refunded", wantKeys: []string{"uid/c1"},
		},
		"refused connection is a clean failure": {
			wantKind: loop.ResultFailed, wantOutput: "request not sent",
		},
		"broken connection after sending is unknown": {
			handler:  hangUp,
			wantKind: loop.ResultUnknown, wantOutput: "outcome unknown", wantKeys: []string{"uid/c1"},
		},
		"idempotent tool re-sends with the same key": {
			handler: func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 0 {
					hangUp(n, w, r)
					return
				}
				_, _ = w.Write([]byte("ok"))
			},
			idempotent: true, wantKind: loop.ResultSucceeded, wantOutput: "ok", wantKeys: []string{"uid/c1", "uid/c1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var j journal
			url := refusedURL(t)
			if tc.handler != nil {
				var mu sync.Mutex
				n := 0
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					j.add(r.Header.Get(HeaderIdempotencyKey))
					mu.Lock()
					i := n
					n++
					mu.Unlock()
					tc.handler(i, w, r)
				}))
				defer srv.Close()
				url = srv.URL
			}
			tool := &HTTP{URL: url, Timeout: 5 * time.Second, Idempotent: tc.idempotent, MaxAttempts: 3, Client: &http.Client{}}
			got := tool.Invoke(context.Background(), call)
			if got.Kind != tc.wantKind || !strings.Contains(got.Output, tc.wantOutput) {
				t.Errorf("result = %s %q, want %s containing %q", got.Kind, got.Output, tc.wantKind, tc.wantOutput)
			}
			if diff := cmp.Diff(tc.wantKeys, j.get()); diff != "" {
				t.Errorf("requests received (-want +got):\n%s", diff)
			}
		})
	}
}

// hangUp closes the connection after reading the request: the server may
// have acted, the client cannot know.
func hangUp(_ int, w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// refusedURL is an address where nothing listens.
func refusedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

func TestTruncate(t *testing.T) {
	tests := map[string]struct {
		in   string
		n    int
		want string
	}{
		"short":         {in: "abc", n: 10, want: "abc"},
		"cut with mark": {in: strings.Repeat("a", 40), n: 20, want: strings.Repeat("a", 20-len("…[truncated]")) + "…[truncated]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := truncate(tc.in, tc.n); got != tc.want {
				t.Errorf("truncate = %q, want %q", got, tc.want)
			}
		})
	}
}
