package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/loop"
)

// Headers the http tool sends with every call (DESIGN.md §2).
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderRun            = "X-Exagent-Run"
	HeaderCall           = "X-Exagent-Call"
)

// HTTP posts the call's JSON arguments to a URL.
//
// Contract: 2xx → succeeded with the body; any other status → failed with a
// bounded excerpt. A failure before the request could have been sent
// (refused, DNS) → failed. A timeout or broken connection after the request
// began → unknown, unless Idempotent, where the same request (same
// Idempotency-Key) is re-sent up to MaxAttempts times.
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
		res = h.once(ctx, call)
		if res.Kind != loop.ResultUnknown || ctx.Err() != nil {
			return res
		}
	}
	return res
}

func (h *HTTP) once(ctx context.Context, call Call) loop.ToolResult {
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
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
		return failed(call, "building request: %v", err)
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
		if !began.Load() || notSent(err) {
			return failed(call, "request not sent: %v", err)
		}
		return unknown(call, "outcome unknown: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResultBytes+1))
	if err != nil {
		// The status line arrived, so the server decided: the effect's fate
		// is known even if its body is incomplete.
		if resp.StatusCode/100 == 2 {
			return succeeded(call, fmt.Sprintf("%s…[body incomplete: %v]", data, err))
		}
		return failed(call, "HTTP %d (body incomplete: %v)", resp.StatusCode, err)
	}
	if resp.StatusCode/100 != 2 {
		return failed(call, "HTTP %d: %s", resp.StatusCode, truncate(string(data), MaxExcerptBytes))
	}
	return succeeded(call, string(data))
}
