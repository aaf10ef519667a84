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

package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/tools"
)

func mcpReconciler() *AgentRunReconciler {
	return &AgentRunReconciler{Tools: &tools.Registry{MCP: &tools.MCPCatalog{Options: mcplist.Options{Timeout: 10 * time.Second}}}}
}

// TestMCPWaitMessage: a wait under way is silent (no status write for
// milliseconds); a failing server is named with its error, the same
// message for every retry; a listing not even begun past the timeout
// says so.
func TestMCPWaitMessage(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	url := "http://mcp.example/mcp"
	failing := tools.MCPWait{Tool: "echo", URL: url, State: mcplist.State{Err: errors.New("tools/list of " + url + ": no answer within 10s"),
		Failures: 3, RetryAt: now.Add(4 * time.Second)}}
	tests := map[string]struct {
		waits  []tools.MCPWait
		waited time.Duration
		want   []string // "" for silence
	}{
		"under way": {waits: []tools.MCPWait{{Tool: "echo", URL: url, State: mcplist.State{Pending: true}}}, waited: time.Second, want: nil},
		"failing": {waits: []tools.MCPWait{failing}, waited: time.Second,
			want: []string{`tool "echo"`, url, "no answer within 10s", "backoff, at most 1m0s apart", "until the server answers tools/list"}},
		"failing, retry under way": {waits: []tools.MCPWait{func() tools.MCPWait { w := failing; w.Pending = true; return w }()},
			want: []string{`tool "echo"`, url, "no answer within 10s"}},
		"a Secret missing": {waits: []tools.MCPWait{{Tool: "echo", URL: url, State: mcplist.State{Err: errors.New("MCP server " + url + ": header Authorization: not found")}}},
			want: []string{url, "header Authorization"}},
		"not begun past the timeout": {waits: []tools.MCPWait{{Tool: "echo", URL: url, State: mcplist.State{Pending: true}}}, waited: 12 * time.Second,
			want: []string{`tool "echo"`, url, "has not answered tools/list yet"}},
	}
	r := mcpReconciler()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := r.mcpWaitMessage(tc.waits, tc.waited)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("message %q, want silence", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("message %q does not say %q", got, w)
				}
			}
		})
	}
	again := failing
	again.Failures, again.RetryAt = 4, now.Add(8*time.Second)
	if a, b := r.mcpWaitMessage([]tools.MCPWait{failing}, 0), r.mcpWaitMessage([]tools.MCPWait{again}, 0); a != b {
		t.Errorf("the message changed between retries (a write per retry):\n%s\n%s", a, b)
	}
}

// TestMCPRecheck: a run looks again at its server's backoff end, or once a
// refresh under way must have ended; a missing Secret every mcpRetry.
func TestMCPRecheck(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	r := mcpReconciler()
	tests := map[string]struct {
		waits []tools.MCPWait
		want  time.Duration
	}{
		"backing off":  {waits: []tools.MCPWait{{State: mcplist.State{Err: errors.New("x"), RetryAt: now.Add(2 * time.Second)}}}, want: 2*time.Second + 20*time.Millisecond},
		"under way":    {waits: []tools.MCPWait{{State: mcplist.State{Pending: true}}}, want: 11 * time.Second},
		"a Secret":     {waits: []tools.MCPWait{{State: mcplist.State{Err: errors.New("x")}}}, want: mcpRetry},
		"the earliest": {waits: []tools.MCPWait{{State: mcplist.State{Pending: true}}, {State: mcplist.State{Err: errors.New("x"), RetryAt: now.Add(time.Second)}}}, want: time.Second + 20*time.Millisecond},
	}
	for name, tc := range tests {
		if got := r.mcpRecheck(tc.waits, now); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
}

// TestMCPWants: a run's claim needs listings since the instant this
// process first saw the current startable episode; a new episode (an
// approval at a new revision, a new claim count) starts a new one; a new
// run and its Queued self are one episode.
func TestMCPWants(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	sc := func(phase exagentv1.RunPhase, revision, attempts int64) *scope {
		s := &scope{key: key, run: &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}}
		s.status.Phase, s.status.Revision, s.status.Attempts = phase, revision, attempts
		return s
	}
	var w mcpWants
	steps := []struct {
		sc   *scope
		now  time.Time
		want time.Time
	}{
		{sc("", 0, 0), t0, t0},
		{sc(exagentv1.PhaseQueued, 0, 0), t0.Add(time.Second), t0},
		{sc(exagentv1.PhaseApproved, 1, 1), t0.Add(time.Minute), t0.Add(time.Minute)},
		{sc(exagentv1.PhaseApproved, 1, 1), t0.Add(2 * time.Minute), t0.Add(time.Minute)},
		{sc(exagentv1.PhaseApproved, 2, 2), t0.Add(3 * time.Minute), t0.Add(3 * time.Minute)},
	}
	for i, s := range steps {
		if got := w.since(s.sc, s.now); !got.Equal(s.want) {
			t.Errorf("step %d: since %s, want %s", i, got, s.want)
		}
	}
	w.forget(key)
	if got := w.since(sc(exagentv1.PhaseApproved, 2, 2), t0.Add(4*time.Minute)); !got.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("after forget: since %s, want now", got)
	}
}
