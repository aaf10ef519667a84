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

package bounded

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// TooLargeError is what a bounded body returns once more than Limit bytes
// arrived.
type TooLargeError struct {
	// What was being read ("model answer", "MCP answer", …).
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over the %s bound: exagent read no more of it", e.What, Size(e.Limit))
}

// IsTooLarge reports whether err, or an error it wraps, is a *TooLargeError.
func IsTooLarge(err error) bool {
	var t *TooLargeError
	return errors.As(err, &t)
}

// Size renders a byte count the way the bounds are written (8 MiB, 64 KiB).
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Body wraps rc so that it yields at most limit bytes: the read that would
// pass the bound returns what fits and a *TooLargeError, and closes rc at
// once (the connection goes, the sender stops); every later read returns
// the same error. onTrip, when not nil, is called once at that moment.
func Body(rc io.ReadCloser, limit int64, what string, onTrip func(*TooLargeError)) io.ReadCloser {
	return &body{rc: rc, left: limit, limit: limit, what: what, onTrip: onTrip}
}

type body struct {
	rc     io.ReadCloser
	left   int64
	limit  int64
	what   string
	onTrip func(*TooLargeError)

	mu  sync.Mutex // Read and Close may race (a consumer closing from another goroutine)
	err *TooLargeError
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return 0, b.err
	}
	left := b.left
	b.mu.Unlock()
	// One byte past what is left tells "exactly at the bound" from "over it".
	if int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if int64(n) <= left {
		b.left -= int64(n)
		return n, err
	}
	b.left = 0
	b.err = &TooLargeError{What: b.what, Limit: b.limit}
	_ = b.rc.Close()
	if b.onTrip != nil {
		b.onTrip(b.err)
	}
	return int(left), b.err
}

func (b *body) Close() error { return b.rc.Close() }

// ReadAll reads r to its end, or to limit bytes and a *TooLargeError when
// there is more; what names it in the error.
func ReadAll(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(data)) > limit {
		return data[:limit], &TooLargeError{What: what, Limit: limit}
	}
	return data, err
}

// Transport bounds every response body next returns. onTrip, when not nil,
// is called once per body that passes the bound.
func Transport(next http.RoundTripper, limit int64, what string, onTrip func(*TooLargeError)) http.RoundTripper {
	return &transport{next: next, limit: limit, what: what, onTrip: onTrip}
}

type transport struct {
	next   http.RoundTripper
	limit  int64
	what   string
	onTrip func(*TooLargeError)
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = Body(resp.Body, t.limit, t.what, t.onTrip)
	}
	return resp, err
}

// CloseIdleConnections passes on to next, so a client over this transport
// can still drop its idle connections.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
