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
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/exagent-io/exagent/loop"
)

// mutation is one builtin write, ready to send.
type mutation struct {
	send func(ctx context.Context) (string, error)
	// idempotent: sending it again gives what sending it once gives, so
	// a lost answer is re-sent (bounded) instead of reported unknown.
	idempotent bool
	// gone, when set, recognises the answer to a re-send that proves the
	// effect complete (a UID-fenced delete finding its object gone).
	gone func(err error) (string, bool)
}

type argsError string

func (e argsError) Error() string { return string(e) }

func errArgs(msg string) error { return argsError(msg) }

// mutate sends m and classifies what may have happened. A clean answer to
// the first send (4xx, or a failure before any byte left) is a failed
// outcome. An answer that leaves the write possibly applied (see
// mayHaveApplied) is unknown — unless m is idempotent, where it is re-sent
// up to MaxAttempts times with backoff; a re-send's success is success,
// and a re-send's refusal after a possibly applied try stays unknown (the
// refusal may be the first try's doing).
func (b *Builtins) mutate(ctx context.Context, call Call, m mutation) loop.ToolResult {
	attempts := 1
	if m.idempotent {
		attempts = max(b.MaxAttempts, 1)
	}
	var first, last error
	sent := 0
	for i := 0; i < attempts; i++ {
		if i > 0 && !sleep(ctx, backoff(i, b.Backoff, b.MaxBackoff, retryAfter(last))) {
			break
		}
		tctx, wasSent := traceSent(ctx)
		out, err := m.send(tctx)
		if err == nil {
			if first != nil {
				out += fmt.Sprintf(" (sent %d times: the answer to an earlier try was lost: %v)", i+1, first)
			}
			return succeeded(call, out)
		}
		applied := mayHaveApplied(err, wasSent())
		if first == nil {
			if !applied {
				return failed(call, "%v", err)
			}
			first = err
		}
		if wasSent() {
			sent++
		}
		last = err
		if applied || !wasSent() || ctx.Err() != nil {
			continue // possibly applied again, or this re-send never left
		}
		if m.gone != nil {
			if out, ok := m.gone(err); ok {
				return succeeded(call, out)
			}
		}
		return unknown(call, "outcome unknown: the answer to the first try was lost (%v); a re-send was refused: %v", first, err)
	}
	if sent <= 1 {
		return unknown(call, "outcome unknown: %v", first)
	}
	return unknown(call, "outcome unknown after %d sends: first %v; last %v", sent, first, last)
}

// mayHaveApplied reports whether a failed write may still have taken
// effect. Not when it never left this process (sent is false, or the
// connection could not be made), nor when the apiserver answered a 4xx:
// it decided, and refused. When the apiserver says it may still be
// processing (504 Timeout, ServerTimeout, an etcd timeout — a 500), or any
// other 5xx but 501, or the connection broke or timed out after sending
// (EOF, reset, a client-side timeout), the write may have landed.
func mayHaveApplied(err error, sent bool) bool {
	var ae argsError
	if errors.As(err, &ae) || !sent || notSent(err) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
			return true
		}
		code := status.Status().Code
		return code >= 500 && code != http.StatusNotImplemented
	}
	return true
}

// retryAfter is the delay the apiserver suggested in its answer, if any.
func retryAfter(err error) time.Duration {
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// noWriteRetry keeps client-go from re-sending a write on its own: it
// retries any verb whose 5xx answer carries Retry-After (a ServerTimeout
// does), which for a write that is not idempotent would be a silent second
// effect. Re-sending a write is the tool's decision alone; the Status body
// still carries the suggested delay, which the tool honours.
type noWriteRetry struct{ next http.RoundTripper }

func (t noWriteRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode >= 500 && req.Method != http.MethodGet && req.Method != http.MethodHead {
		resp.Header.Del("Retry-After")
	}
	return resp, err
}
