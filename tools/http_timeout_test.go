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
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// TestHTTPTimeoutAfterSending checks a server that received the request and
// does not answer within the tool's timeout: the effect may have happened,
// so the outcome is unknown — unless the tool is idempotent, where the same
// request (same Idempotency-Key) is re-sent a bounded number of times.
func TestHTTPTimeoutAfterSending(t *testing.T) {
	call := Call{ToolInvocation: loop.ToolInvocation{CallID: "c1", Tool: "t", Args: json.RawMessage(`{"a":1}`), IdempotencyKey: "uid/c1"},
		RunNamespace: "ns", RunName: "r"}
	const key = "uid/c1"
	tests := map[string]struct {
		idempotent bool
		// answerFrom is the first request (0-based) the server answers
		// with 200; requests before it block. -1: it never answers.
		answerFrom int
		// cancelOnArrival cancels the caller's context when the first
		// request arrives (the manager stopping mid-call).
		cancelOnArrival bool
		wantKind        loop.ResultKind
		wantOutput      string
		wantKeys        []string
	}{
		"non-idempotent tool: unknown after one request": {
			answerFrom: -1, wantKind: loop.ResultUnknown, wantOutput: "outcome unknown",
			wantKeys: []string{key},
		},
		"idempotent tool: re-sent with the same key, then unknown": {
			idempotent: true, answerFrom: -1, wantKind: loop.ResultUnknown, wantOutput: "outcome unknown",
			wantKeys: []string{key, key, key},
		},
		"idempotent tool: a re-sent request that is answered succeeds": {
			idempotent: true, answerFrom: 1, wantKind: loop.ResultSucceeded, wantOutput: "done",
			wantKeys: []string{key, key},
		},
		"idempotent tool: no re-send once the caller gave up": {
			idempotent: true, answerFrom: -1, cancelOnArrival: true, wantKind: loop.ResultUnknown, wantOutput: "outcome unknown",
			wantKeys: []string{key},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var j journal
			release := make(chan struct{})
			arrived := make(chan struct{}, 16)
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				j.add(r.Header.Get(HeaderIdempotencyKey))
				if r.Header.Get(HeaderCall) != call.CallID || r.Header.Get(HeaderRun) != "ns/r" {
					t.Errorf("headers %s=%q %s=%q", HeaderCall, r.Header.Get(HeaderCall), HeaderRun, r.Header.Get(HeaderRun))
				}
				mu.Lock()
				i := n
				n++
				mu.Unlock()
				arrived <- struct{}{}
				if tc.cancelOnArrival {
					cancel()
				}
				if tc.answerFrom >= 0 && i >= tc.answerFrom {
					_, _ = w.Write([]byte("done"))
					return
				}
				<-release
			}))
			// Cleanups run last-in first-out: the blocked handlers are
			// released before Close waits for them.
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })

			tool, err := NewHTTP(&exagentv1.HTTPTool{URL: srv.URL, Timeout: "200ms", Idempotent: tc.idempotent}, nil, &http.Client{})
			if err != nil {
				t.Fatal(err)
			}
			got := tool.Invoke(ctx, call)
			if got.Kind != tc.wantKind || !strings.Contains(got.Output, tc.wantOutput) {
				t.Errorf("result = %s %q, want %s containing %q", got.Kind, got.Output, tc.wantKind, tc.wantOutput)
			}
			// Every request the client sent reaches the handler; wait for
			// as many as expected before reading the journal.
			for range tc.wantKeys {
				select {
				case <-arrived:
				case <-time.After(10 * time.Second):
					t.Fatalf("server saw %d requests, want %d", len(j.get()), len(tc.wantKeys))
				}
			}
			if diff := cmp.Diff(tc.wantKeys, j.get()); diff != "" {
				t.Errorf("requests received (-want +got):\n%s", diff)
			}
		})
	}
}
