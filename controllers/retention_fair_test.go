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

package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// tarpit is an archive sink that accepts every connection and answers
// nothing until it is released (or the sender gives up: the archive
// timeout): the sink of a tenant who wants the shared retention workers.
type tarpit struct {
	srv     *httptest.Server
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	held    int
}

func newTarpit(t *testing.T) *tarpit {
	tp := &tarpit{release: make(chan struct{})}
	tp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp.mu.Lock()
		tp.held++
		tp.mu.Unlock()
		select {
		case <-tp.release:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { tp.free(); tp.srv.Close() })
	return tp
}

func (tp *tarpit) free() { tp.once.Do(func() { close(tp.release) }) }

// holding is how many archive requests the tarpit has accepted.
func (tp *tarpit) holding() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.held
}

// startManagerOver starts one manager over the namespaces of hs (the
// first harness owns it): one shared set of retention workers.
func startManagerOver(opts controllers.Options, hs ...*harness) {
	h := hs[0]
	h.t.Helper()
	cfg := rest.CopyConfig(env().Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	mo := h.managerOptions()
	mo.Cache.DefaultNamespaces = map[string]cache.Config{}
	for _, x := range hs {
		mo.Cache.DefaultNamespaces[x.ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		h.t.Fatalf("new manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 4
	}
	m := h.setUpAndStart(ctx, cancel, mgr, opts)
	h.t.Cleanup(m.stop)
}

// TestRetentionTarpitSinkDoesNotStarveOtherNamespaces: namespace A's
// archive sink accepts and never answers (bounded only by the archive
// timeout, minutes); with two retention workers shared by the manager,
// namespace B's ended runs are still deleted while A's deliveries are
// stuck — the tarpit is held until B is done, then released, and A's runs
// go too. Without a per-namespace share every worker waits on A's sink.
func TestRetentionTarpitSinkDoesNotStarveOtherNamespaces(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	tsA, tsB := newToolServer(t), newToolServer(t)
	tp := newTarpit(t)
	startManagerOver(controllers.Options{RetentionWorkers: 2, ArchiveTimeout: 10 * time.Minute}, a, b)
	retentionAgent(a, "pay", tsA, exagentv1.RetentionSpec{
		TTLSecondsAfterFinished: ptr.To[int32](0),
		Archive:                 &exagentv1.NotifySink{Name: "tarpit", URL: tp.srv.URL + "/archive"},
	})
	retentionAgent(b, "pay", tsB, exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0)})

	// A's runs end first: their archives are ahead of B's in the queue.
	for i := range 3 {
		a.approvedRun(fmt.Sprintf("a%d", i), "pay")
	}
	if !eventually(func() bool { return tp.holding() >= 1 }) {
		t.Fatal("the tarpit never received an archive")
	}

	// B's runs have TTL 0: each may be gone before a poll sees it end, so
	// their ends are read from their Events.
	start := time.Now()
	for i := range 2 {
		b.approvedGone(fmt.Sprintf("b%d", i), "pay")
	}
	t.Logf("the other namespace's runs ran and were deleted beside the tarpit sink in %s; the tarpit holds %d of A's archives",
		time.Since(start).Round(time.Millisecond), tp.holding())
	for i := range 3 {
		if !a.exists(fmt.Sprintf("a%d", i)) {
			t.Fatalf("run a%d is gone while its archive is stuck in the tarpit", i)
		}
	}

	tp.free()
	for i := range 3 {
		a.waitGone(fmt.Sprintf("a%d", i))
	}
}
