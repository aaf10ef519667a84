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
	"fmt"
	"sync"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Limiter enforces each Agent's model.rateLimit across all runs of that
// Agent in this manager process (per manager: replicas do not share a
// budget; docs/models.md says so). A request waits in Admit — before it
// takes an executor slot or a connection — until the Agent's request and
// token buckets hold enough and fewer than maxConcurrent of its requests
// are in flight. Its Permit is released when the answer (or the failure)
// comes, and charges the tokens the provider reported.
type Limiter struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu     sync.Mutex
	agents map[string]*agentBudget
}

// maxIdleBudgets bounds the budgets kept for Agents with nothing in flight
// or waiting: past it, full idle budgets are dropped (a new one starts full,
// so dropping a full one changes nothing).
const maxIdleBudgets = 1024

type agentBudget struct {
	spec     exagentv1.ModelRateLimit
	requests float64 // available requests
	tokens   float64 // available tokens; may be negative (overdrawn by an answer)
	at       time.Time
	inFlight int
	waiters  int
	// changed is closed (and replaced) whenever a permit is released or
	// the spec changes: a waiter on concurrency wakes on it.
	changed chan struct{}
}

// Permit is one admitted request.
type Permit struct {
	l    *Limiter
	key  string
	once sync.Once
}

// Done releases the permit and charges the request's tokens.
func (p *Permit) Done(tokens int64) {
	if p == nil {
		return
	}
	p.once.Do(func() { p.l.release(p.key, tokens) })
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Admit waits until the Agent named key may send one more request under
// spec, or ctx ends. waiting, when set, is told each time the request
// starts to wait (until when it expects to, and why).
func (l *Limiter) Admit(ctx context.Context, key string, spec exagentv1.ModelRateLimit, waiting func(until time.Time, why string)) (*Permit, error) {
	l.mu.Lock()
	b := l.budget(key, spec)
	b.waiters++
	defer func() { b.waiters--; l.mu.Unlock() }()
	lastWhy := ""
	for {
		now := l.now()
		b.refill(now)
		wait, why := b.wait()
		if why == "" {
			b.requests--
			b.inFlight++
			return &Permit{l: l, key: key}, nil
		}
		if waiting != nil && why != lastWhy {
			until := now.Add(wait)
			if wait <= 0 {
				until = time.Time{} // until a request in flight ends
			}
			l.mu.Unlock()
			waiting(until, why)
			l.mu.Lock()
			lastWhy = why
			continue // the budget may have moved meanwhile
		}
		changed := b.changed
		l.mu.Unlock()
		var timer *time.Timer
		var fired <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			fired = timer.C
		}
		select {
		case <-ctx.Done():
			l.mu.Lock()
			return nil, fmt.Errorf("waiting for the Agent's model.rateLimit (%s): %w", why, context.Cause(ctx))
		case <-fired:
		case <-changed:
		}
		if timer != nil {
			timer.Stop()
		}
		l.mu.Lock()
	}
}

// budget returns key's budget (made full on first use), with spec as its
// current limits. Called with l.mu held.
func (l *Limiter) budget(key string, spec exagentv1.ModelRateLimit) *agentBudget {
	if l.agents == nil {
		l.agents = map[string]*agentBudget{}
	}
	b, ok := l.agents[key]
	if !ok {
		if len(l.agents) >= maxIdleBudgets {
			l.sweep()
		}
		b = &agentBudget{at: l.now(), changed: make(chan struct{})}
		l.agents[key] = b
	}
	if !equalLimits(b.spec, spec) {
		old := b.spec
		b.spec = *spec.DeepCopy()
		// A bucket the old limits did not have starts full; one they had
		// keeps what it holds, within the new size.
		if old.RequestsPerMinute == nil {
			b.requests = perMinute(spec.RequestsPerMinute)
		}
		b.requests = min(b.requests, perMinute(spec.RequestsPerMinute))
		if spec.TokensPerMinute != nil {
			if old.TokensPerMinute == nil {
				b.tokens = float64(*spec.TokensPerMinute)
			}
			b.tokens = min(b.tokens, float64(*spec.TokensPerMinute))
		}
		b.signal()
	}
	return b
}

// sweep drops the budgets nobody uses. Called with l.mu held.
func (l *Limiter) sweep() {
	now := l.now()
	for k, b := range l.agents {
		b.refill(now)
		if b.inFlight == 0 && b.waiters == 0 && b.full() {
			delete(l.agents, k)
		}
	}
}

func (l *Limiter) release(key string, tokens int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.agents[key]
	if !ok {
		return
	}
	b.refill(l.now())
	b.inFlight--
	if b.spec.TokensPerMinute != nil {
		b.tokens -= float64(max(tokens, 0))
	}
	b.signal()
}

func (b *agentBudget) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// refill adds what the time since the last refill earned, up to a minute's worth.
func (b *agentBudget) refill(now time.Time) {
	elapsed := now.Sub(b.at).Minutes()
	if elapsed <= 0 {
		return
	}
	b.at = now
	if r := b.spec.RequestsPerMinute; r != nil {
		b.requests = min(b.requests+elapsed*float64(*r), float64(*r))
	}
	if t := b.spec.TokensPerMinute; t != nil {
		b.tokens = min(b.tokens+elapsed*float64(*t), float64(*t))
	}
}

func (b *agentBudget) full() bool {
	return (b.spec.RequestsPerMinute == nil || b.requests >= float64(*b.spec.RequestsPerMinute)) &&
		(b.spec.TokensPerMinute == nil || b.tokens >= float64(*b.spec.TokensPerMinute))
}

// wait says how long until one more request may go, and why not now
// ("" when it may). A zero wait with a reason: until a request in flight
// ends.
func (b *agentBudget) wait() (time.Duration, string) {
	s := &b.spec
	if c := s.MaxConcurrent; c != nil && b.inFlight >= int(*c) {
		return 0, fmt.Sprintf("maxConcurrent %d requests in flight", *c)
	}
	if r := s.RequestsPerMinute; r != nil && b.requests < 1 {
		return minutes((1 - b.requests) / float64(*r)), fmt.Sprintf("requestsPerMinute %d used", *r)
	}
	if t := s.TokensPerMinute; t != nil && b.tokens <= 0 {
		// Until the bucket holds a token again.
		return minutes((1-b.tokens)/float64(*t)) + time.Millisecond, fmt.Sprintf("tokensPerMinute %d used", *t)
	}
	return 0, ""
}

func minutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

func perMinute(p *int32) float64 {
	if p == nil {
		return 0
	}
	return float64(*p)
}

func equalLimits(a, b exagentv1.ModelRateLimit) bool {
	eq32 := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eq64 := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq32(a.RequestsPerMinute, b.RequestsPerMinute) && eq64(a.TokensPerMinute, b.TokensPerMinute) &&
		eq32(a.MaxConcurrent, b.MaxConcurrent)
}
