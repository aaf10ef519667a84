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
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/loop"
)

// Headers the http tool sends with every call (docs/architecture.md §2).
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderRun            = "X-Exagent-Run"
	HeaderCall           = "X-Exagent-Call"
)

// HTTP posts the call's JSON arguments to a URL.
//
// Contract: 2xx → succeeded with the body; any other status → failed with a
// bounded excerpt. A failure before the request could have been sent
// (refused, DNS, the egress policy) → failed. A timeout or broken
// connection after the request began → unknown, unless Idempotent, where
// the same request (same Idempotency-Key) is re-sent up to MaxAttempts
// times. A redirect is never followed (redirectOutcome classifies the 3xx
// itself), and a 2xx body over MaxResultBytes is unknown: the server acted,
// its result was not read.
type HTTP struct {
	URL         string
	Timeout     time.Duration
	Idempotent  bool
	MaxAttempts int
	// Headers are the resolved values of spec.headers.
	Headers map[string]string
	Client  *http.Client
}

var _ Tool = (*HTTP)(nil)

// DefaultHTTPTimeout applies when spec.timeout is unset.
const DefaultHTTPTimeout = 30 * time.Second

// NewHTTP builds the tool from its spec and resolved header values.
func NewHTTP(spec *exagentv1.HTTPTool, headers map[string]string, client *http.Client) (*HTTP, error) {
	timeout, _, err := spec.Timeout.Parse(DefaultHTTPTimeout)
	if err != nil {
		return nil, fmt.Errorf("http tool timeout: %w", err)
	}
	return &HTTP{URL: spec.URL, Timeout: timeout, Idempotent: spec.Idempotent, MaxAttempts: 3, Headers: headers, Client: client}, nil
}

// Invoke posts the arguments.
func (h *HTTP) Invoke(ctx context.Context, call Call) loop.ToolResult {
	attempts := 1
	if h.Idempotent && h.MaxAttempts > 1 {
		attempts = h.MaxAttempts
	}
	var res loop.ToolResult
	for i := 0; i < attempts; i++ {
		var resend bool
		res, resend = h.once(ctx, call)
		if res.Kind != loop.ResultUnknown || !resend || ctx.Err() != nil {
			return res
		}
	}
	return res
}

func (h *HTTP) once(ctx context.Context, call Call) (res loop.ToolResult, resend bool) {
	// Whatever client the tool was given, a redirect is never followed:
	// it would re-send the Secret-valued headers wherever Location points.
	client := egress.WithoutRedirects(h.Client)
	ctx = egress.WithNamespace(ctx, call.RunNamespace)
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()

	// began flips once any byte of the request may have reached the wire;
	// before that a failure is clean.
	var began atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { began.Store(true) },
		WroteHeaders:     func() { began.Store(true) },
	}
	body := call.Args
	if len(body) == 0 {
		body = []byte("{}")
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return failed(call, "building request: %v", err), false
	}
	// Without GetBody net/http never replays the request on its own after a
	// reused connection broke: re-sending is this tool's decision alone.
	req.GetBody = nil
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotencyKey, call.IdempotencyKey)
	req.Header.Set(HeaderRun, call.RunNamespace+"/"+call.RunName)
	req.Header.Set(HeaderCall, call.CallID)

	resp, err := client.Do(req)
	if err != nil {
		var denied *egress.DeniedError
		if errors.As(err, &denied) {
			// Refused at dial time: nothing was sent.
			return failed(call, "request not sent: %v", denied), false
		}
		if !began.Load() || notSent(err) {
			return failed(call, "request not sent: %v", err), false
		}
		return unknown(call, "outcome unknown: %v", err), true
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 == 3 {
		return redirectOutcome(call, resp), false
	}
	data, err := bounded.ReadAll(resp.Body, MaxResultBytes, "the answer")
	ok := resp.StatusCode/100 == 2
	switch {
	case bounded.IsTooLarge(err) && ok:
		// The server acted; what it answered cannot be given to the model
		// whole, and a cut result could be taken for the whole one.
		return unknown(call, "HTTP %d: the server acted, but %v (a tool result holds at most %s): the result is lost; "+
			"resolve the call, and make the endpoint answer less", resp.StatusCode, err, bounded.Size(MaxResultBytes)), false
	case bounded.IsTooLarge(err):
		return failed(call, "HTTP %d: %s…[the answer is over %s]", resp.StatusCode,
			truncate(string(data), MaxExcerptBytes), bounded.Size(MaxResultBytes)), false
	case err != nil:
		// The status line arrived, so the server decided: the effect's fate
		// is known even if its body is incomplete.
		if ok {
			return succeeded(call, fmt.Sprintf("%s…[body incomplete: %v]", data, err)), false
		}
		return failed(call, "HTTP %d (body incomplete: %v)", resp.StatusCode, err), false
	case !ok:
		return failed(call, "HTTP %d: %s", resp.StatusCode, truncate(string(data), MaxExcerptBytes)), false
	}
	return succeeded(call, string(data)), false
}

// redirectOutcome classifies a 3xx answer, which is never followed. 301,
// 307 and 308 say the resource is elsewhere and the request is to be made
// there: the server did not process it (Failed). Any other 3xx — 303 by
// definition, and 302 as most servers use it — is how a server answers a
// POST it has processed (post/redirect/get), or an auth proxy's way to a
// login page: the effect may have happened (Unknown, never re-sent: a
// re-send gets the same answer).
func redirectOutcome(call Call, resp *http.Response) loop.ToolResult {
	where := truncate(resp.Header.Get("Location"), 256)
	if where == "" {
		where = "(no Location)"
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return failed(call, "HTTP %d redirect to %s not followed (exagent never follows redirects): the request was not processed there; "+
			"point the tool's url at the final address", resp.StatusCode, where)
	}
	return unknown(call, "HTTP %d redirect to %s not followed (exagent never follows redirects): the server may have acted "+
		"(a 302 or 303 is how servers answer a request they processed); resolve the call, and point the tool's url at the final address",
		resp.StatusCode, where)
}
