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
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// R6's tarpit archive sink: the hostile tenant's retention.archive
// accepts every connection and answers nothing until released (the
// manager gives up at --archive-timeout, minutes), so each of its ended
// runs holds a retention worker as long as it can. Another tenant's ended
// runs must still be deleted meanwhile: retention gives each namespace its
// own share of the workers (controllers/retention_fair.go).
const (
	// tarpitRuns of the hostile tenant end with TTL 0 and an archive
	// sink that never answers: more than the manager's retention workers.
	tarpitRuns = 4
	// retentionOtherRuns of the other tenant end with TTL 0, no archive.
	retentionOtherRuns = 3
	// retentionDeadline bounds the other tenant's deletions: far under the
	// archive timeout (2m) the tarpit would make them wait behind.
	retentionDeadline = 90 * time.Second
)

// tarpitSink is an HTTP server on loopback that reads each request's
// headers and then waits — the body unread, no answer — until released
// or the client hangs up.
type tarpitSink struct {
	URL     string
	srv     *http.Server
	release chan struct{}
	once    sync.Once

	mu       sync.Mutex
	accepted int
}

func newTarpitSink() (*tarpitSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	tp := &tarpitSink{URL: "http://" + l.Addr().String() + "/archive", release: make(chan struct{})}
	tp.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp.mu.Lock()
		tp.accepted++
		tp.mu.Unlock()
		select {
		case <-tp.release:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})}
	go func() { _ = tp.srv.Serve(l) }()
	return tp, nil
}

// Accepted is how many archive requests the tarpit has taken in.
func (tp *tarpitSink) Accepted() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.accepted
}

// Release makes the tarpit answer 204, now and from now on.
func (tp *tarpitSink) Release() { tp.once.Do(func() { close(tp.release) }) }

func (tp *tarpitSink) Close() { tp.Release(); _ = tp.srv.Close() }

// tarpitRetention runs the tarpit on the manager mgr serves (the R6
// hook): the hostile tenant's runs are archived to the tarpit, then the
// other tenant's runs must be deleted while those archives are stuck; the
// tarpit is held until they are, then released, and the hostile runs go
// too. It reports "the other namespace's retention delay beside the
// tarpit sink": from the other tenant's last run ending to its last run
// deleted.
func tarpitRetention(t *testing.T, cl *cluster) {
	t.Helper()
	tp, err := newTarpitSink()
	if err != nil {
		t.Fatalf("tarpit archive sink: %v", err)
	}
	defer tp.Close()
	done := func(types.NamespacedName, int32) Turn { return Turn{Text: "done"} }
	hostile := newScenario(t, cl, "r6-tarpit", done)
	other := newScenario(t, cl, "r6-retained", done)
	withRetention(t, hostile, "archived", exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0),
		Archive: &exagentv1.NotifySink{Name: "tarpit", URL: tp.URL}})
	withRetention(t, other, "plain", exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0)})

	for i := range tarpitRuns {
		if err := hostile.createRun(fmt.Sprintf("tarpit-%d", i), "archived"); err != nil {
			t.Fatal(err)
		}
	}
	if err := procs.Poll(2*time.Minute, func() (bool, error) { return tp.Accepted() > 0, nil }); err != nil {
		t.Fatalf("the tarpit archive sink never got an archive: %v", err)
	}

	var names []string
	for i := range retentionOtherRuns {
		name := fmt.Sprintf("retained-%d", i)
		if err := other.createRun(name, "plain"); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	var lastEnded time.Time
	for _, name := range names {
		// With TTL 0 a run may be deleted before anyone saw it ended: gone counts as ended.
		err := procs.Poll(runDeadline, func() (bool, error) {
			r := &exagentv1.AgentRun{}
			switch err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: other.ns, Name: name}, r); {
			case apierrors.IsNotFound(err):
				return true, nil
			case err != nil:
				return false, nil
			}
			return ended(r), nil
		})
		if err != nil {
			t.Fatalf("run %s did not end: %v", name, err)
		}
		lastEnded = time.Now()
	}
	err = procs.Poll(retentionDeadline, func() (bool, error) {
		for _, name := range names {
			if !gone(cl, other.ns, name) {
				return false, nil
			}
		}
		return true, nil
	})
	delay := time.Since(lastEnded)
	if err != nil {
		t.Errorf("the other tenant's ended runs were not deleted within %s while the tarpit held %d archives: one tenant's sink starves retention",
			retentionDeadline, tp.Accepted())
	}
	t.Logf("chaos r6: the other namespace's retention delay beside the tarpit sink: %s (%d runs, TTL 0; the tarpit held %d archives)",
		delay.Round(10*time.Millisecond), retentionOtherRuns, tp.Accepted())
	for i := range tarpitRuns {
		if gone(cl, hostile.ns, fmt.Sprintf("tarpit-%d", i)) {
			t.Errorf("run tarpit-%d was deleted while its archive was stuck in the tarpit", i)
		}
	}

	tp.Release()
	if err := procs.Poll(3*time.Minute, func() (bool, error) {
		for i := range tarpitRuns {
			if !gone(cl, hostile.ns, fmt.Sprintf("tarpit-%d", i)) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("the tarpit's runs were not deleted once it answered: %v", err)
	}
}

// withRetention creates the scenario's Agent name with retention r.
func withRetention(t *testing.T, s *scenario, name string, r exagentv1.RetentionSpec) {
	t.Helper()
	s.createAgent(name)
	ctx := context.Background()
	// The manager writes the Agent's status (Ready) meanwhile: retry on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		a := &exagentv1.Agent{}
		if err := s.cl.c.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: name}, a); err != nil {
			return err
		}
		a.Spec.Retention = r
		return s.cl.c.Update(ctx, a)
	})
	if err != nil {
		t.Fatalf("setting the retention of agent %s: %v", name, err)
	}
}

// gone reports whether run ns/name no longer exists.
func gone(cl *cluster, ns, name string) bool {
	err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &exagentv1.AgentRun{})
	return apierrors.IsNotFound(err)
}
