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
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/exagent-io/exagent/internal/clip"
	"github.com/exagent-io/exagent/loop"
)

// Call is one invocation with what a tool needs to know about its run.
type Call struct {
	loop.ToolInvocation
	RunNamespace string
	RunName      string
	RunUID       string
	// ServiceAccount the builtin tools impersonate.
	ServiceAccount string
	// ServiceAccountRefusal, when set, is why the builtin tools may not act
	// as ServiceAccount: a child run inherits it from its parent, and its
	// current Agent does not allow it (docs/delegation.md). A builtin
	// call fails with it before any request.
	ServiceAccountRefusal string
}

// Tool executes one call. Contract: Invoke never panics on user input and
// classifies every outcome — ResultSucceeded when the effect happened,
// ResultFailed when it certainly did not (or the tool refused), and
// ResultUnknown when it may have happened.
type Tool interface {
	Invoke(ctx context.Context, call Call) loop.ToolResult
}

// Result limits. A result is bounded by what one transcript value may hold
// (64 KiB); a large one costs the hot status nothing, since it is sealed
// into a segment at its commit (docs/architecture.md §10). Failure excerpts stay
// small: the model needs the gist, not the body.
const (
	MaxResultBytes  = 64 << 10
	MaxExcerptBytes = 1 << 10
)

func succeeded(call Call, out string) loop.ToolResult {
	return loop.ToolResult{CallID: call.CallID, Kind: loop.ResultSucceeded, Output: truncate(out, MaxResultBytes)}
}

func failed(call Call, format string, a ...any) loop.ToolResult {
	return loop.ToolResult{CallID: call.CallID, Kind: loop.ResultFailed, Output: truncate(fmt.Sprintf(format, a...), MaxResultBytes)}
}

func unknown(call Call, format string, a ...any) loop.ToolResult {
	return loop.ToolResult{CallID: call.CallID, Kind: loop.ResultUnknown, Output: truncate(fmt.Sprintf(format, a...), MaxExcerptBytes)}
}

// truncate cuts s to at most n bytes (internal/clip), marking the cut.
func truncate(s string, n int) string { return clip.Bytes(s, n, "…[truncated]") }

// notSent reports whether err proves the request never left this process:
// the connection could not be made (refused, DNS, no route). Anything else
// after a request began may have reached the server.
func notSent(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	return false
}

// traceSent returns a context whose HTTP requests flip the returned flag
// once any byte of a request may have reached the wire. Before that, a
// failure proves the request never left this process (refused, DNS, a
// context cancelled while waiting for a connection or the rate limiter).
func traceSent(ctx context.Context) (context.Context, func() bool) {
	var began atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { began.Store(true) },
		WroteHeaders:     func() { began.Store(true) },
	}
	return httptrace.WithClientTrace(ctx, trace), began.Load
}

// backoff is the wait before re-send n (1, 2, …): base doubled per re-send
// with jitter (between half and the whole of it), or the server's suggested
// delay when it gave one, both capped at limit.
func backoff(n int, base, limit, suggested time.Duration) time.Duration {
	if suggested > 0 {
		return min(suggested, limit)
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx ends, reporting whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
