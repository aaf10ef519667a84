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
	"net/http"
	"time"

	"github.com/exagent-io/exagent/loop"
)

// RateLimitedError is a provider's "not now": 429, Anthropic's 529
// overloaded, a 503 with a Retry-After, Bedrock's throttling. The request
// was refused, not processed: it has no effect and is not billed, so it is
// sent again once the provider's wait is over, for as long as the run's
// budget lasts (Waiting).
type RateLimitedError struct {
	Status int
	// RetryAfter is the provider's wait; zero when it named none.
	RetryAfter time.Duration
	Err        error
}

func (e *RateLimitedError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("rate limited (HTTP %d, retry after %s): %v", e.Status, e.RetryAfter.Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("rate limited (HTTP %d): %v", e.Status, e.Err)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// rateLimitStatus are the answers that mean "not now" whatever their
// headers; a 503 is one only with a Retry-After (otherwise it is a plain
// server error, retried by the SDK and then counted as a failure).
func rateLimitStatus(status int, hasRetryAfter bool) bool {
	return status == http.StatusTooManyRequests || status == 529 || (status == http.StatusServiceUnavailable && hasRetryAfter)
}

// WaitBudget says how long a model request of a run may wait for a rate
// limit, and whom to tell. The controller puts it on the request's
// context: Until is the earliest of the run's deadline, the end of its
// active-time reservation and the manager's --model-max-rate-limit-wait.
type WaitBudget struct {
	Until time.Time
	// Waiting is told each wait as it begins (until when, and why), so the
	// run's condition can say it: "waiting for the model provider (rate
	// limited until …)". Nil: nobody is told.
	Waiting func(until time.Time, why string)
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

type waitBudgetKey struct{}

// WithWaitBudget puts b on ctx for Waiting.
func WithWaitBudget(ctx context.Context, b WaitBudget) context.Context {
	return context.WithValue(ctx, waitBudgetKey{}, b)
}

func waitBudgetFrom(ctx context.Context) (WaitBudget, bool) {
	b, ok := ctx.Value(waitBudgetKey{}).(WaitBudget)
	return b, ok
}

// Rate-limit backoff when the provider names no wait.
const (
	rateLimitBackoffMin = time.Second
	rateLimitBackoffMax = time.Minute
)

// Waiting wraps a provider: a RateLimitedError is waited out (the
// provider's Retry-After, else exponential backoff from 1s to 1min) and the
// request sent again, as long as the wait ends within the context's
// WaitBudget. A wait past the budget returns the error: the run then
// counts it as a failed model request. Without a budget nothing is waited.
// The run keeps its claim meanwhile: the job is in flight, so the owner
// renews the lease as for any long answer.
type Waiting struct{ Provider }

// Complete sends req, waiting out rate limits within the budget.
func (w Waiting) Complete(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	budget, ok := waitBudgetFrom(ctx)
	now := time.Now
	if ok && budget.Now != nil {
		now = budget.Now
	}
	backoff := rateLimitBackoffMin
	for {
		resp, err := w.Provider.Complete(ctx, req)
		var rl *RateLimitedError
		if err == nil || !ok || !errors.As(err, &rl) {
			return resp, err
		}
		wait := rl.RetryAfter
		if wait <= 0 {
			wait = backoff
			backoff = min(backoff*2, rateLimitBackoffMax)
		}
		until := now().Add(wait)
		if until.After(budget.Until) {
			return resp, fmt.Errorf("%w; not waited: that is past the run's budget for waiting (%s)", err, budget.Until.UTC().Format(time.RFC3339))
		}
		if budget.Waiting != nil {
			budget.Waiting(until, rl.Error())
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return resp, fmt.Errorf("%w; the wait was cut short: %w", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}
