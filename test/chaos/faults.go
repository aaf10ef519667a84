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

package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// FaultKind is one way an apiserver request fails.
type FaultKind string

const (
	// Fault409, Fault500, Fault503 answer with that status without forwarding.
	Fault409 FaultKind = "409"
	Fault500 FaultKind = "500"
	Fault503 FaultKind = "503"
	// FaultTimeout waits, then fails with a timeout without forwarding.
	FaultTimeout FaultKind = "timeout"
	// FaultLostACK forwards the request (a write lands) and replaces the
	// answer with a broken connection or a 504 ServerTimeout: the caller
	// cannot know the write landed.
	FaultLostACK FaultKind = "lost-ack"
)

// Fault is one injected failure.
type Fault struct {
	Kind   FaultKind
	Method string
	Path   string
	// Landed says the request reached the apiserver (lost ACK).
	Landed bool
	At     time.Time
}

// Commit is one status write of a run as the manager saw it answered.
type Commit struct {
	Run types.NamespacedName
	// Acked: the manager was told the write succeeded.
	Acked bool
	Fault FaultKind
	// Started are the calls the written status has Started (with attempts).
	Started map[string]int64
	// ModelStep is the step whose model request the written status has
	// outstanding (-1 for none).
	ModelStep int32
	// At is taken before the answer is handed to the manager, so anything
	// the manager did because of the answer happened after it.
	At time.Time
}

// FaultInjector is an http.RoundTripper for a manager's rest.Config
// (rest.Config.Wrap): it fails a share of the requests, seeded, and
// journals every status write of a run with what the manager was told.
// Watches are left alone: a broken watch is a reconnect the informer
// handles; the protocol's risk is in reads and writes.
type FaultInjector struct {
	Rate  float64
	Delay time.Duration // of a FaultTimeout

	armed atomic.Bool

	mu      sync.Mutex
	rng     *rand.Rand
	faults  []Fault
	commits []Commit
	count   int
	forced  []*forcedFault
}

// forcedFault fails the next left requests that match, ahead of the draw.
type forcedFault struct {
	kind  FaultKind
	left  int
	used  int
	match func(method, path string, c *Commit) bool
}

// Force makes the next n matching requests fail with kind, so that each
// class of fault is met at least n times whatever the draw (c is the
// status write a request carries, nil for any other request).
func (f *FaultInjector) Force(kind FaultKind, n int, match func(method, path string, c *Commit) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forced = append(f.forced, &forcedFault{kind: kind, left: n, match: match})
}

// force returns the forced fault of a request, if any; reset picks the
// broken-connection form of a lost ACK (forced ones alternate, the 504
// first, so both forms are met).
func (f *FaultInjector) force(method, path string, c *Commit) (kind FaultKind, reset, ok bool) {
	if !f.armed.Load() {
		return "", false, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ff := range f.forced {
		if ff.left > 0 && ff.match(method, path, c) {
			ff.left--
			ff.used++
			f.count++
			return ff.kind, ff.used%2 == 0, true
		}
	}
	return "", false, false
}

// NewFaultInjector fails rate of the requests, drawn from seed.
func NewFaultInjector(seed uint64, rate float64) *FaultInjector {
	return &FaultInjector{Rate: rate, Delay: 300 * time.Millisecond, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

// Arm starts the faults (setup — discovery, the signing key — goes through clean).
func (f *FaultInjector) Arm() { f.armed.Store(true) }

// Wrap is the rest.Config wrapper.
func (f *FaultInjector) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &faultTransport{f: f, rt: rt}
}

// Faults returns the faults injected so far.
func (f *FaultInjector) Faults() []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Fault(nil), f.faults...)
}

// Commits returns the run status writes seen so far.
func (f *FaultInjector) Commits() []Commit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Commit(nil), f.commits...)
}

// Requests is how many requests went through.
func (f *FaultInjector) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

func (f *FaultInjector) draw(write bool) (FaultKind, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	if !f.armed.Load() || f.rng.Float64() >= f.Rate {
		return "", false
	}
	kinds := []FaultKind{Fault500, Fault503, FaultTimeout}
	if write {
		kinds = append(kinds, Fault409, FaultLostACK, FaultLostACK)
	}
	return kinds[f.rng.IntN(len(kinds))], true
}

func (f *FaultInjector) record(ft Fault, c *Commit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft.Kind != "" {
		f.faults = append(f.faults, ft)
	}
	if c != nil {
		f.commits = append(f.commits, *c)
	}
}

type faultTransport struct {
	f  *FaultInjector
	rt http.RoundTripper
}

func (t *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") == "true" {
		return t.rt.RoundTrip(req)
	}
	write := req.Method != http.MethodGet && req.Method != http.MethodHead
	var commit *Commit
	if write && req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/agentruns/") && strings.HasSuffix(req.URL.Path, "/status") {
		commit = t.statusWrite(req)
	}
	kind, reset, fail := t.f.force(req.Method, req.URL.Path, commit)
	forced := fail
	if !fail {
		kind, fail = t.f.draw(write)
	}
	ft := Fault{Kind: kind, Method: req.Method, Path: req.URL.Path, At: time.Now()}
	if !fail {
		resp, err := t.rt.RoundTrip(req)
		if commit != nil {
			commit.Acked = err == nil && resp.StatusCode/100 == 2
			commit.At = time.Now()
		}
		t.f.record(Fault{}, commit)
		return resp, err
	}
	if commit != nil {
		commit.Fault = kind
	}
	switch kind {
	case FaultLostACK:
		resp, err := t.rt.RoundTrip(req)
		ft.Landed = err == nil && resp.StatusCode/100 == 2
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		if commit != nil {
			commit.At = time.Now()
		}
		t.f.record(ft, commit)
		if (forced && reset) || (!forced && t.coin()) {
			return nil, fmt.Errorf("injected lost ACK: %w", syscall.ECONNRESET)
		}
		return statusResponse(req, http.StatusGatewayTimeout, "Timeout",
			"injected lost ACK: the server was unable to return a response in the time allotted, but may still be processing the request"), nil
	case FaultTimeout:
		select {
		case <-time.After(t.f.Delay):
		case <-req.Context().Done():
		}
		if commit != nil {
			commit.At = time.Now()
		}
		t.f.record(ft, commit)
		return nil, fmt.Errorf("injected timeout: %w", timeoutError{})
	}
	if commit != nil {
		commit.At = time.Now()
	}
	t.f.record(ft, commit)
	switch kind {
	case Fault409:
		return statusResponse(req, http.StatusConflict, "Conflict", "injected conflict: the object has been modified; please apply your changes to the latest version and try again"), nil
	case Fault503:
		return statusResponse(req, http.StatusServiceUnavailable, "ServiceUnavailable", "injected: the server is currently unable to handle the request"), nil
	}
	return statusResponse(req, http.StatusInternalServerError, "InternalError", "injected: an error on the server has prevented the request from succeeding"), nil
}

func (t *faultTransport) coin() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.rng.IntN(2) == 0
}

// statusWrite reads (and restores) the body of a run status write.
func (t *faultTransport) statusWrite(req *http.Request) *Commit {
	if req.Body == nil {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if err != nil {
		return nil
	}
	var run exagentv1.AgentRun
	if err := json.Unmarshal(body, &run); err != nil {
		return nil
	}
	c := &Commit{Run: types.NamespacedName{Namespace: run.Namespace, Name: run.Name}, Started: map[string]int64{}, ModelStep: -1}
	for _, call := range run.Status.Calls {
		if call.State == exagentv1.CallStarted {
			c.Started[call.ID] = call.Attempt
		}
	}
	if run.Status.Cursor.ModelRequest != nil {
		c.ModelStep = run.Status.Cursor.Step
	}
	return c
}

func statusResponse(req *http.Request, code int, reason, msg string) *http.Response {
	body, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code})
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ interface{ Timeout() bool } = timeoutError{}

// CheckAcked is the R3 rule "never IO after a commit that failed": every
// tool or model request of a run followed a status write the manager was
// told succeeded and that records the call Started (the step's model
// request outstanding). Times are one process's clock: the commit's At is
// taken before the manager hears the answer, the request's At when it
// arrives.
func CheckAcked(reqs []Request, commits []Commit) []Violation {
	var out []Violation
	for _, r := range reqs {
		if r.Kind == KindBuiltin {
			continue // its time is the watch's, not the arrival's
		}
		ok := false
		var failed []string
		for _, c := range commits {
			if c.Run != r.Run || !c.At.Before(r.At) {
				continue
			}
			covers := (r.Kind == KindModel && c.ModelStep == r.Step) || (r.Kind != KindModel && hasCall(c.Started, r.CallID))
			if !covers {
				continue
			}
			if c.Acked {
				ok = true
				break
			}
			failed = append(failed, fmt.Sprintf("%s at %s", c.Fault, stamp(c.At)))
		}
		if !ok {
			out = append(out, Violation{Rule: "io-after-failed-commit", Run: r.Run.String(), UID: r.RunUID,
				Detail: fmt.Sprintf("%s request %s arrived at %s with no acknowledged commit of its intent before it (failed commits of it: %v)",
					r.Kind, describe(r), stamp(r.At), failed)})
		}
	}
	return out
}

func hasCall(m map[string]int64, id string) bool { _, ok := m[id]; return ok }
