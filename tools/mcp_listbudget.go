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
	"fmt"
	"io"
	"sync"

	"github.com/exagent-io/exagent/internal/bounded"
)

// listingBudget is one listing's bound on what it reads: every response
// body of the listing's session draws on it (body), so what arrives is
// counted across pages as it arrives — its bytes, and its JSON structure
// (marks: each '{', '[', ':' and ',' outside a string), which is what
// decoding it costs. The read that would cross either bound returns what
// fits and the budget's error, closes its body (the connection goes, the
// sender stops) and cancels the listing (stop), so that the SDK gives up
// at once whatever it was reading; every later read of any body of the
// session returns the same error. Safe for concurrent use.
type listingBudget struct {
	stop               context.CancelFunc
	maxBytes, maxMarks int64

	mu    sync.Mutex
	bytes int64
	marks int64
	trip  error
}

func newListingBudget(maxBytes, maxMarks int64, stop context.CancelFunc) *listingBudget {
	return &listingBudget{stop: stop, maxBytes: maxBytes, maxMarks: maxMarks}
}

// listingTooLargeWhat names a listing in its bounds' errors.
const listingTooLargeWhat = "the listing (every page's answer together)"

// tooManyValuesError is a listing whose answers passed maxMarks.
type tooManyValuesError struct{ limit int64 }

func (e *tooManyValuesError) Error() string {
	return fmt.Sprintf("%s has more than %d JSON values (counting each '{', '[', ':' and ','): exagent read no more of it",
		listingTooLargeWhat, e.limit)
}

// tripped is the error of a budget that was crossed (nil while it holds).
func (b *listingBudget) tripped() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.trip
}

func (b *listingBudget) body(rc io.ReadCloser) io.ReadCloser { return &budgetBody{rc: rc, b: b} }

// budgetBody is one response body of the listing; it scans what it reads
// for the marks, remembering whether it is inside a string. A JSON string
// never holds a raw line break, so a line break ends any string: a server
// cannot hide structure from the count behind a stray quote in its event
// stream's framing.
type budgetBody struct {
	rc               io.ReadCloser
	b                *listingBudget
	inString, escape bool
}

func (r *budgetBody) Read(p []byte) (int, error) {
	b := r.b
	b.mu.Lock()
	if b.trip != nil {
		b.mu.Unlock()
		return 0, b.trip
	}
	// One byte past what is left tells "exactly at the bound" from "over it".
	if left := b.maxBytes - b.bytes; int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	b.mu.Unlock()
	n, err := r.rc.Read(p)
	marks, within := r.scan(p[:n], b.maxMarks-b.markCount())
	b.mu.Lock()
	b.marks += marks
	switch {
	case b.trip != nil:
	case b.bytes+int64(n) > b.maxBytes:
		b.trip = &bounded.TooLargeError{What: listingTooLargeWhat, Limit: b.maxBytes}
	case b.marks > b.maxMarks:
		b.trip = &tooManyValuesError{limit: b.maxMarks}
	default:
		b.bytes += int64(n)
		b.mu.Unlock()
		return n, err
	}
	trip := b.trip
	fits := min(int64(n), max(b.maxBytes-b.bytes, 0), int64(within))
	b.bytes = b.maxBytes
	b.mu.Unlock()
	_ = r.rc.Close()
	b.stop()
	return int(fits), trip
}

func (b *listingBudget) markCount() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.marks
}

// scan counts the marks in p, and how many of p's bytes come before the
// mark that passes left (len(p) when none does).
func (r *budgetBody) scan(p []byte, left int64) (marks int64, within int) {
	within = len(p)
	for i, c := range p {
		switch {
		case c == '\n':
			r.inString, r.escape = false, false
		case r.escape:
			r.escape = false
		case r.inString && c == '\\':
			r.escape = true
		case c == '"':
			r.inString = !r.inString
		case !r.inString && (c == '{' || c == '[' || c == ':' || c == ','):
			if marks++; marks > left && within == len(p) {
				within = i
			}
		}
	}
	return marks, within
}

func (r *budgetBody) Close() error { return r.rc.Close() }
