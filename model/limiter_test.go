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
	"sync"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// admitNow admits without waiting, or says why it would wait: a context
// already cut short makes Admit return instead of waiting.
func admitNow(l *Limiter, key string, spec exagentv1.ModelRateLimit) (*Permit, string) {
	ctx, cancel := context.WithCancel(context.Background())
	var why string
	p, err := l.Admit(ctx, key, spec, func(_ time.Time, w string) { why = w; cancel() })
	if err != nil {
		return nil, why
	}
	return p, ""
}

// TestLimiterBuckets: requests per minute refill evenly, an answer's
// tokens overdraw the token bucket until time pays them back, and
// maxConcurrent counts the permits not yet done; Agents do not share.
func TestLimiterBuckets(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := &Limiter{Now: clock.Now}

	rpm := exagentv1.ModelRateLimit{RequestsPerMinute: new(int32(2))}
	for i := range 2 {
		if p, why := admitNow(l, "ns/a", rpm); p == nil {
			t.Fatalf("request %d of 2 per minute waits: %s", i, why)
		}
	}
	if p, why := admitNow(l, "ns/a", rpm); p != nil || why != "requestsPerMinute 2 used" {
		t.Fatalf("the third request: permit %v, why %q; want a wait for requestsPerMinute", p, why)
	}
	if p, _ := admitNow(l, "ns/b", rpm); p == nil {
		t.Error("another Agent's budget was used")
	}
	clock.Add(30 * time.Second) // half a minute earns one request
	if p, why := admitNow(l, "ns/a", rpm); p == nil {
		t.Errorf("after 30s: waits (%s), want one more request", why)
	}

	tpm := exagentv1.ModelRateLimit{TokensPerMinute: new(int64(1000))}
	p, _ := admitNow(l, "ns/t", tpm)
	p.Done(3000) // one large answer: 2000 overdrawn
	if p, why := admitNow(l, "ns/t", tpm); p != nil || why != "tokensPerMinute 1000 used" {
		t.Fatalf("after an overdraw: permit %v, why %q", p, why)
	}
	clock.Add(2*time.Minute + time.Second) // paid back
	if p, why := admitNow(l, "ns/t", tpm); p == nil {
		t.Errorf("after the overdraw is paid back: waits (%s)", why)
	}

	conc := exagentv1.ModelRateLimit{MaxConcurrent: new(int32(1))}
	first, _ := admitNow(l, "ns/c", conc)
	if p, why := admitNow(l, "ns/c", conc); p != nil || why != "maxConcurrent 1 requests in flight" {
		t.Fatalf("a second request in flight: permit %v, why %q", p, why)
	}
	admitted := make(chan *Permit)
	go func() {
		p, err := l.Admit(context.Background(), "ns/c", conc, nil)
		if err != nil {
			t.Error(err)
		}
		admitted <- p
	}()
	first.Done(0)
	first.Done(0) // twice is once
	select {
	case p := <-admitted:
		p.Done(0)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not admitted when the permit was done")
	}
	if p, _ := admitNow(l, "ns/c", conc); p == nil {
		t.Error("a permit done twice freed two slots or none")
	}
}

// rateLimitedOnce answers RateLimitedError n times, then text.
type rateLimitedOnce struct {
	mu   sync.Mutex
	n    int
	wait time.Duration
}

func (r *rateLimitedOnce) Complete(context.Context, loop.ModelRequest) (loop.ModelResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n > 0 {
		r.n--
		return loop.ModelResponse{}, &RateLimitedError{Status: 429, RetryAfter: r.wait, Err: errors.New("slow down")}
	}
	return loop.ModelResponse{Content: "ok"}, nil
}

// TestWaitingBudget: a rate limit is waited out within the budget, told
// to Waiting; one past the budget is returned at once; without a budget
// nothing is waited.
func TestWaitingBudget(t *testing.T) {
	now := time.Now()
	var told []time.Time
	ctx := WithWaitBudget(context.Background(), WaitBudget{Until: now.Add(time.Hour), Waiting: func(u time.Time, _ string) { told = append(told, u) }})
	resp, err := Waiting{&rateLimitedOnce{n: 2, wait: time.Millisecond}}.Complete(ctx, loop.ModelRequest{})
	if err != nil || resp.Content != "ok" || len(told) != 2 {
		t.Errorf("within the budget: %q, %v, told %d times; want the answer after 2 waits", resp.Content, err, len(told))
	}
	short := WithWaitBudget(context.Background(), WaitBudget{Until: now.Add(time.Second)})
	_, err = Waiting{&rateLimitedOnce{n: 1, wait: time.Hour}}.Complete(short, loop.ModelRequest{})
	var rl *RateLimitedError
	if !errors.As(err, &rl) {
		t.Errorf("past the budget: %v, want the RateLimitedError at once", err)
	}
	if _, err := (Waiting{&rateLimitedOnce{n: 1, wait: time.Millisecond}}).Complete(context.Background(), loop.ModelRequest{}); !errors.As(err, &rl) {
		t.Errorf("without a budget: %v, want the RateLimitedError", err)
	}
}
