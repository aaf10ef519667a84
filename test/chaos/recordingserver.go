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
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// storeRead is how long a server tries to read the run it got a request
// for (the apiserver may be restarting).
const storeRead = 20 * time.Second

// recordingServer is what the tool and model servers share, so that a
// hold, a latency or the journal behave the same whichever server a
// scenario aims its fault at: a real HTTP listener on 127.0.0.1, the
// journal of every request, the hold ("during IO") and the latency. Each
// server only decides what a request is and what it answers.
type recordingServer struct {
	URL string

	srv    *http.Server
	reader client.Reader

	// mu also guards the fields of the server that embeds this one: a
	// record's stamp runs under it.
	mu      sync.Mutex
	journal []Request
	hold    func(r Request) bool
	held    chan Request
	release chan struct{}
	latency time.Duration
}

// listen starts serving handler on 127.0.0.1; URL is the listener's
// address followed by path. what names the server in an error.
func (rs *recordingServer) listen(what, path string, reader client.Reader, handler http.HandlerFunc) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	rs.URL = "http://" + l.Addr().String() + path
	rs.reader = reader
	rs.held = make(chan Request, 1024)
	rs.release = make(chan struct{})
	rs.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rs.srv.Serve(l) }()
	return nil
}

// HoldWhen makes the server hold, after journaling it (and, for a tool,
// applying its effect), every request for which cond is true, until
// ReleaseAll or until the client goes away (a killed manager): "during
// IO". Held requests are announced on Held.
func (rs *recordingServer) HoldWhen(cond func(r Request) bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.hold = cond
}

// Held announces each request the server holds.
func (rs *recordingServer) Held() <-chan Request { return rs.held }

// ReleaseAll answers every held request and holds no more.
func (rs *recordingServer) ReleaseAll() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.hold = nil
	select {
	case <-rs.release:
	default:
		close(rs.release)
	}
}

// SetLatency makes every answer take d: a busy endpoint, so that calls
// queue in the manager's executor.
func (rs *recordingServer) SetLatency(d time.Duration) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.latency = d
}

// Close stops the server.
func (rs *recordingServer) Close() {
	rs.ReleaseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = rs.srv.Shutdown(ctx)
}

// Journal returns every request received so far.
func (rs *recordingServer) Journal() []Request {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]Request(nil), rs.journal...)
}

// record journals req, then lets the latency pass and waits out a hold.
// stamp, if not nil, runs under mu before req is journaled, for what a
// server decides from its own state. It returns false if the client went
// away first: it gets no answer.
func (rs *recordingServer) record(ctx context.Context, req Request, stamp func(*Request)) bool {
	rs.mu.Lock()
	if stamp != nil {
		stamp(&req)
	}
	rs.journal = append(rs.journal, req)
	hold := rs.hold != nil && rs.hold(req)
	release, latency := rs.release, rs.latency
	rs.mu.Unlock()
	if !pause(ctx, latency) {
		return false
	}
	if hold {
		rs.held <- req
		select {
		case <-release:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// readRV reads the run past any cache and returns its resourceVersion:
// every write the apiserver acknowledged before this read is at or below
// it. It retries while the apiserver is unreachable.
func readRV(ctx context.Context, reader client.Reader, key types.NamespacedName) (int64, types.UID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeRead)
	defer cancel()
	for {
		run := &exagentv1.AgentRun{}
		err := reader.Get(ctx, key, run)
		if err == nil {
			rv, _ := strconv.ParseInt(run.ResourceVersion, 10, 64)
			return rv, run.UID
		}
		select {
		case <-ctx.Done():
			return 0, ""
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pause lets d pass unless ctx ends first (false).
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
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
