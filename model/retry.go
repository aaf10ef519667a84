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
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/exagent-io/exagent/internal/egress"
)

// Retry defaults. A model request has no side effect, so a transient
// failure is worth a patient re-send before it counts against the run's
// consecutive model failures (loop: three end the run ModelError).
const (
	DefaultTimeout       = 2 * time.Minute
	DefaultMaxRetries    = 3
	DefaultMaxRetryDelay = 30 * time.Second
	// MaxRetriesLimit caps Options.MaxRetries: every try may be paid for.
	MaxRetriesLimit = 10
)

// RetryOptions bound the retrying of one model request. The official SDK
// does the retrying (option.WithMaxRetries): it re-sends on 408, 409, 429,
// 5xx and broken connections, waits the server's Retry-After (seconds or
// HTTP-date, or Retry-After-Ms) or else backs off exponentially from 0.5s
// with jitter; retryGuard below keeps it inside the request's budget.
type RetryOptions struct {
	// Timeout bounds one model request, every try and wait included;
	// zero means DefaultTimeout.
	Timeout time.Duration
	// AttemptTimeout bounds one try, so a hung try is retried while budget
	// remains; zero means Timeout (a try may use the whole budget).
	AttemptTimeout time.Duration
	// MaxRetries after the first try; zero means DefaultMaxRetries, a
	// negative value none, and it is capped at MaxRetriesLimit.
	MaxRetries int
	// MaxRetryDelay caps one wait: a longer backoff is cut to it, and a
	// server asking for longer ends the retrying with its answer. Zero
	// means DefaultMaxRetryDelay.
	MaxRetryDelay time.Duration
}

func (o RetryOptions) withDefaults() RetryOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.AttemptTimeout <= 0 || o.AttemptTimeout > o.Timeout {
		o.AttemptTimeout = o.Timeout
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = DefaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	o.MaxRetries = min(o.MaxRetries, MaxRetriesLimit)
	if o.MaxRetryDelay <= 0 {
		o.MaxRetryDelay = DefaultMaxRetryDelay
	}
	return o
}

// retryGuard watches the tries of one request. As SDK middleware it sees
// every try's answer and, through the x-should-retry header the SDK obeys,
// stops a retry that could not help: a 400, 401, 403, 404 or 422 is the
// request's own fault (whatever the server's x-should-retry says), and a
// Retry-After past the request's deadline would only wait for the timeout.
// A try that cannot go otherwise the next time — refused by the egress
// policy, answered with a redirect (never followed) — ends the request at
// once: the SDK retries every error without a response, so the guard
// cancels the request (stop) and wrap returns that try's error.
type retryGuard struct {
	mu    sync.Mutex
	tries int
	last  string // the last try's answer, for the error message
	// stopped says why the guard ended the retrying, if it did.
	stopped string
	// stop cancels the request; final is the error it was cancelled for.
	stop  context.CancelFunc
	final error
	// bundle says the endpoint is trusted through model.caBundleSecretRef
	// (for the message of a certificate refused).
	bundle bool
	// status and wait are the last answer's status and Retry-After (ok:
	// it had one), for a RateLimitedError.
	status  int
	wait    time.Duration
	hasWait bool
}

// RedirectError is a model endpoint's redirect, which is never followed:
// the Location could be anywhere, and the request carries the API key.
type RedirectError struct {
	Status   int
	Location string
}

func (e *RedirectError) Error() string {
	where := e.Location
	if len(where) > 256 {
		where = where[:256] + "…"
	}
	if where == "" {
		where = "(no Location)"
	}
	return fmt.Sprintf("the model endpoint answered HTTP %d, a redirect to %s: not followed (exagent never follows redirects); set model.baseURL to the final address", e.Status, where)
}

// noRetryStatus are answers a re-send cannot change.
var noRetryStatus = map[int]bool{
	http.StatusBadRequest: true, http.StatusUnauthorized: true, http.StatusForbidden: true,
	http.StatusNotFound: true, http.StatusUnprocessableEntity: true,
}

func (g *retryGuard) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tries++
	var denied *egress.DeniedError
	switch {
	case errors.As(err, &denied):
		g.last = err.Error()
		return res, g.end(denied)
	case err != nil && certificateError(err):
		// The same certificate would be met again: never sent, not retried.
		g.last = err.Error()
		return res, g.end(&UntrustedError{Bundle: g.bundle, Err: err})
	case err != nil:
		g.last = err.Error()
		return res, err
	case res == nil:
		return res, err
	case res.StatusCode/100 == 3:
		_ = res.Body.Close()
		g.last = res.Status
		return nil, g.end(&RedirectError{Status: res.StatusCode, Location: res.Header.Get("Location")})
	}
	g.last, g.stopped = res.Status, ""
	g.status = res.StatusCode
	g.wait, g.hasWait = retryAfter(res.Header, time.Now())
	if noRetryStatus[res.StatusCode] {
		res.Header.Set("x-should-retry", "false")
		return res, nil
	}
	if wait, ok := retryAfter(res.Header, time.Now()); ok {
		if deadline, has := req.Context().Deadline(); has && time.Now().Add(wait).After(deadline) {
			g.stopped = fmt.Sprintf("not retried: the server's Retry-After %s is past the request's deadline", wait.Round(time.Millisecond))
			res.Header.Set("x-should-retry", "false")
		}
	}
	return res, nil
}

// end stops the request for err, which a re-send would meet again.
// Called with g.mu held.
func (g *retryGuard) end(err error) error {
	if g.final == nil {
		g.final = err
	}
	if g.stop != nil {
		g.stop()
	}
	return err
}

// wrap adds what the tries said to err. An answer that says "not now"
// (rateLimitStatus) is a *RateLimitedError, which Waiting waits out.
func (g *retryGuard) wrap(err error, o RetryOptions) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.final != nil {
		return g.final
	}
	if st := g.status; rateLimitStatus(st, g.hasWait) && apiStatus(err) == st {
		return &RateLimitedError{Status: st, RetryAfter: g.wait, Err: g.wrapLocked(err, o)}
	}
	return g.wrapLocked(err, o)
}

func (g *retryGuard) wrapLocked(err error, o RetryOptions) error {
	if errors.Is(err, context.DeadlineExceeded) && g.last != "" {
		return fmt.Errorf("no answer within the model timeout %s after %s (last: %s): %w", o.Timeout, tries(g.tries), g.last, err)
	}
	switch {
	case g.stopped != "":
		return fmt.Errorf("%s after %s: %w", g.stopped, tries(g.tries), err)
	case g.tries > 1:
		return fmt.Errorf("after %s: %w", tries(g.tries), err)
	}
	return err
}

// apiStatus is the HTTP status of an SDK's error answer (0: err is not an
// answer — a broken connection, a timeout).
func apiStatus(err error) int {
	var oe *openai.Error
	var ae *anthropic.Error
	switch {
	case errors.As(err, &oe):
		return oe.StatusCode
	case errors.As(err, &ae):
		return ae.StatusCode
	}
	return 0
}

func tries(n int) string {
	if n == 1 {
		return "1 try"
	}
	return fmt.Sprintf("%d tries", n)
}

// retryAfter reads the server's wait: Retry-After-Ms, or Retry-After in
// seconds or as an HTTP-date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return seconds(ms / 1000), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return seconds(s), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// seconds converts without overflowing: a wait of centuries is a long wait.
func seconds(s float64) time.Duration {
	return time.Duration(min(s*float64(time.Second), float64(math.MaxInt64/2)))
}
