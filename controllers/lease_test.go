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
	"net/http"
	"sync"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestSlowToolKeepsItsLease: a tool call that outlasts the lease keeps the
// run owned (the owner renews while IO is in flight), so a second manager
// watching the same run never recovers it and the effect happens once.
func TestSlowToolKeepsItsLease(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // runs before the server's Close, which waits for handlers
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		<-release // the endpoint answers only once the first lease is long gone
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	h.startManager(controllers.Options{})
	h.startManager(controllers.Options{})
	h.createAgent("slow", exagentv1.AgentSpec{
		Model: fixture.Scripted(
			fixture.CallTurn("slow-1", "slow", map[string]any{"amount": 1}),
			fixture.TextTurn("done"),
		),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("slow", ts.url("/slow"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("slow", "slow", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "2s" })
	// Still the first attempt, with a live lease, well after that attempt's
	// first lease would have expired: the owner renewed it.
	h.waitRun("slow", "a renewed lease", func(r *exagentv1.AgentRun) bool {
		c := r.Status.Claim
		return r.Status.Phase == exagentv1.PhaseRunning && c != nil && c.Attempt == 1 && c.ClaimedAt != nil &&
			time.Now().After(c.ClaimedAt.Add(3*time.Second)) && c.LeaseExpiresAt.After(time.Now())
	})
	free()
	done := h.waitPhase("slow", exagentv1.PhaseSucceeded)
	if done.Status.Attempts != 1 {
		t.Errorf("attempts = %d, want 1 (the lease was never lost)", done.Status.Attempts)
	}
	if got := len(ts.journal()); got != 1 {
		t.Errorf("effects = %d, want 1", got)
	}
}
