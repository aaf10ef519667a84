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
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// answer is one scripted reply of the chat-completions server.
type answer struct {
	status int
	header map[string]string
	// hang holds the request until the client gives up on it.
	hang bool
	// hangUp closes the connection without an answer.
	hangUp bool
}

const okBody = `{"id":"x","object":"chat.completion","created":1,"model":"m",
	"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"final"}}],
	"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`

// scriptedServer answers the i-th request with answers[i] (the last one
// repeats) and records each request's X-Stainless-Retry-Count.
type scriptedServer struct {
	mu      sync.Mutex
	answers []answer
	retries []string
	// release ends hanging handlers (closed before the server is).
	release chan struct{}
	url     string
}

func newScriptedServer(t *testing.T, answers ...answer) *scriptedServer {
	s := &scriptedServer{answers: answers, release: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(s.release) })
	s.url = srv.URL
	return s
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.answers[min(len(s.retries), len(s.answers)-1)]
	s.retries = append(s.retries, r.Header.Get("X-Stainless-Retry-Count"))
	s.mu.Unlock()
	switch {
	case a.hang:
		// The server notices the client hung up only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	case a.hangUp:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	if a.status == 0 || a.status == http.StatusOK {
		_, _ = w.Write([]byte(okBody))
		return
	}
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(`{"error":{"message":"injected","type":"server_error"}}`))
}

func (s *scriptedServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.retries...)
}

// TestOpenAIRetries sends one request through the SDK to a local server
// that fails transiently, and checks the tries the server saw and that the
// final answer (or the failure) is what Complete returns.
func TestOpenAIRetries(t *testing.T) {
	ok := answer{status: http.StatusOK}
	status := func(code int, header ...string) answer {
		a := answer{status: code, header: map[string]string{}}
		for i := 0; i+1 < len(header); i += 2 {
			a.header[header[i]] = header[i+1]
		}
		return a
	}
	// A date a second ahead, in the HTTP-date form of Retry-After.
	soon := time.Now().Add(time.Second).UTC().Format(http.TimeFormat)
	fast := RetryOptions{MaxRetryDelay: 20 * time.Millisecond}

	tests := map[string]struct {
		answers []answer
		opts    RetryOptions
		wantErr string // empty: the final answer must be used
		// wantTries is how many requests the server saw.
		wantTries int
	}{
		"429 with Retry-After in seconds, then 200": {
			answers: []answer{status(http.StatusTooManyRequests, "Retry-After", "1"), ok}, wantTries: 2,
		},
		"429 with Retry-After as an HTTP-date, then 200": {
			answers: []answer{status(http.StatusTooManyRequests, "Retry-After", soon), ok}, wantTries: 2,
		},
		"500s, then 200": {
			answers: []answer{status(500), status(502), status(503), ok}, opts: fast, wantTries: 4,
		},
		"a broken connection, then 200": {
			answers: []answer{{hangUp: true}, ok}, opts: fast, wantTries: 2,
		},
		"a try past the attempt timeout, then 200": {
			answers: []answer{{hang: true}, ok},
			opts:    RetryOptions{AttemptTimeout: 200 * time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}, wantTries: 2,
		},
		"retries are bounded": {
			answers: []answer{status(500)}, opts: RetryOptions{MaxRetries: 2, MaxRetryDelay: 20 * time.Millisecond},
			wantErr: "after 3 tries", wantTries: 3,
		},
		"no retries when asked for none": {
			answers: []answer{status(503), ok}, opts: RetryOptions{MaxRetries: -1}, wantErr: "503", wantTries: 1,
		},
		"a Retry-After longer than MaxRetryDelay ends the retrying with the answer": {
			answers: []answer{status(http.StatusTooManyRequests, "Retry-After", "3600"), ok}, wantErr: "429", wantTries: 1,
		},
		"a Retry-After past the model timeout ends the retrying with the answer": {
			answers: []answer{status(http.StatusServiceUnavailable, "Retry-After", "20"), ok},
			opts:    RetryOptions{Timeout: 5 * time.Second, MaxRetryDelay: time.Minute},
			wantErr: "past the request's deadline", wantTries: 1,
		},
		"400 is not retried, whatever x-should-retry says": {
			answers: []answer{status(http.StatusBadRequest, "x-should-retry", "true"), ok}, opts: fast, wantErr: "400", wantTries: 1,
		},
		"401 is not retried": {
			answers: []answer{status(http.StatusUnauthorized, "x-should-retry", "true"), ok}, opts: fast, wantErr: "401", wantTries: 1,
		},
		"403 is not retried": {
			answers: []answer{status(http.StatusForbidden), ok}, opts: fast, wantErr: "403", wantTries: 1,
		},
		"404 is not retried": {
			answers: []answer{status(http.StatusNotFound), ok}, opts: fast, wantErr: "404", wantTries: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newScriptedServer(t, tc.answers...)
			p, err := NewOpenAI(OpenAIConfig{BaseURL: s.url, Model: "m", APIKey: "k", Retry: tc.opts, HTTPClient: loopbackOnly(t)})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Complete(context.Background(), loop.ModelRequest{
				Messages: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "hi"}},
			})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Complete: %v", err)
			case tc.wantErr == "" && (resp.Content != "final" || resp.PromptTokens != 5):
				t.Errorf("response = %+v, want the final answer", resp)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tc.wantErr)
			}
			seen := s.seen()
			if len(seen) != tc.wantTries {
				t.Errorf("server saw %d tries (retry counts %v), want %d", len(seen), seen, tc.wantTries)
			}
			for i, rc := range seen {
				if want := strconv.Itoa(i); rc != want {
					t.Errorf("try %d carried X-Stainless-Retry-Count %q, want %q", i, rc, want)
				}
			}
		})
	}
}

// TestOpenAIRetriesStayInsideTimeout: a server that always asks to come
// back in a second is given up on when the model timeout is spent, well
// before the retry bound, with what it last said.
func TestOpenAIRetriesStayInsideTimeout(t *testing.T) {
	s := newScriptedServer(t, answer{status: 503, header: map[string]string{"Retry-After": "1"}})
	p, err := NewOpenAI(OpenAIConfig{BaseURL: s.url, Model: "m", Retry: RetryOptions{Timeout: 2500 * time.Millisecond, MaxRetries: MaxRetriesLimit}, HTTPClient: loopbackOnly(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), loop.ModelRequest{Messages: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "hi"}}})
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v, want the server's 503", err)
	}
	if n := len(s.seen()); n >= MaxRetriesLimit+1 {
		t.Errorf("server saw %d tries: the timeout did not bound the retrying", n)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := map[string]struct {
		header map[string]string
		want   time.Duration
		wantOK bool
	}{
		"seconds":            {header: map[string]string{"Retry-After": "7"}, want: 7 * time.Second, wantOK: true},
		"HTTP-date":          {header: map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, want: 90 * time.Second, wantOK: true},
		"HTTP-date past":     {header: map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, want: 0, wantOK: true},
		"milliseconds first": {header: map[string]string{"Retry-After-Ms": "250", "Retry-After": "7"}, want: 250 * time.Millisecond, wantOK: true},
		"huge":               {header: map[string]string{"Retry-After": "1e300"}, want: seconds(1e300), wantOK: true},
		"garbage":            {header: map[string]string{"Retry-After": "soon"}},
		"none":               {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := retryAfter(h, now)
			if got != tc.want || ok != tc.wantOK || got < 0 {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
