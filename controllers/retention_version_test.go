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
	"net/http"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestRetentionArchivesTheVersionItDeletes: the run is written between
// its archive's 2xx and the journal of it (a hook writes its status
// there, as a late outcome would). The delivery covers the version sent,
// not the one now stored: the run is archived again — under a new id, so
// a sink deduping on ids keeps it — and only the version that second
// archive carries is deleted. Nothing unarchived is ever deleted.
func TestRetentionArchivesTheVersionItDeletes(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	s := newSink(t)
	var once sync.Once
	const edit = "written after the archive was sent"
	h.startManagerWith(controllers.Options{}, func(func()) controllers.Hooks {
		return controllers.Hooks{BeforeArchiveJournal: func(ctx context.Context, key types.NamespacedName, sent error) error {
			if key.Name != "r" || sent != nil {
				return nil
			}
			var err error
			once.Do(func() {
				err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
					run := &exagentv1.AgentRun{}
					if err := h.c.Get(ctx, key, run); err != nil {
						return err
					}
					run.Status.Message = edit
					return h.c.Status().Update(ctx, run)
				})
			})
			return err
		}}
	})
	archiveAgent(t, h, ts, s, 0)
	run := h.approvedRun("r", "pay")
	h.waitGone("r")

	evs := archived(t, s)
	if len(evs) != 2 {
		t.Fatalf("the sink received %d archives (ids %v), want 2: the one the write outdated, and the run as deleted", len(evs), ids(evs))
	}
	if evs[0].ID != string(run.UID)+".run-archived" || evs[1].ID == evs[0].ID {
		t.Errorf("archive ids %v: want the run's id, then a new one for the newer content", ids(evs))
	}
	if got := evs[0].Data.Run.Status.Message; got == edit {
		t.Errorf("the first archive already holds the write made after it was sent")
	}
	if got := evs[1].Data.Run.Status.Message; got != edit {
		t.Errorf("the last archive's run says %q, want the version deleted (%q)", got, edit)
	}
}

// TestRetentionWaitsForALateOutcome: a run cancelled while its tool call
// is in flight has TTL 0, but it is not deleted while the call may still
// answer — the answer is an effect that happened. Once the late outcome
// is journaled the run is archived, the outcome in the archive, and
// deleted.
func TestRetentionWaitsForALateOutcome(t *testing.T) {
	h := newHarness(t)
	ts, other := newToolServer(t), newToolServer(t)
	s := newSink(t)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		<-release
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	h.startManager(controllers.Options{RetentionWorkers: 1})
	retentionAgent(h, "probe", other, exagentv1.RetentionSpec{})
	h.createAgent("busy", exagentv1.AgentSpec{
		Model:     fixture.Scripted(fixture.CallTurn("work", "work", map[string]any{"amount": 1}), fixture.TextTurn("done")),
		Tools:     []exagentv1.ToolSpec{fixture.HTTPTool("work", ts.url("/work"))},
		Policy:    exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		Retention: exagentv1.RetentionSpec{Archive: &exagentv1.NotifySink{Name: "audit", URL: s.srv.URL + "/archive"}},
	})
	h.createRun("busy", "busy", func(r *exagentv1.AgentRunSpec) { r.TTLSecondsAfterFinished = ptr.To[int32](0) })
	h.waitRun("busy", "the call in flight", func(r *exagentv1.AgentRun) bool {
		return len(r.Status.Calls) == 1 && r.Status.Calls[0].State == exagentv1.CallStarted && len(ts.journal()) == 1
	})
	h.cancelRun("busy")
	h.waitPhase("busy", exagentv1.PhaseCancelled)

	h.probe("probe", "probe") // the single worker has looked at the cancelled run
	if !h.exists("busy") {
		t.Fatal("retention deleted a cancelled run whose call was still in flight: its outcome is lost")
	}
	if n := len(s.deliveries()); n != 0 {
		t.Fatalf("the run was archived %d time(s) before its call's outcome was journaled", n)
	}

	free()
	h.waitGone("busy")
	evs := archived(t, s)
	if len(evs) != 1 {
		t.Fatalf("archives sent: %d, want 1", len(evs))
	}
	calls := evs[0].Data.Calls
	if len(calls) != 1 || calls[0].State != exagentv1.CallSucceeded || calls[0].Outcome == nil {
		t.Errorf("archived calls %+v: want the late outcome journaled (Succeeded)", calls)
	}
	if len(ts.journal()) != 1 {
		t.Errorf("effects = %d, want 1", len(ts.journal()))
	}
}
