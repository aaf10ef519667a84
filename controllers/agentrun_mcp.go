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
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/tools"
)

// mcpRetry is how soon a run whose MCP tool cannot be listed for a reason
// no refresh will change (a header Secret missing) looks again.
const mcpRetry = 5 * time.Second

// mcpListings gives the engine the tools/list of the run's Agent's mcp
// tools (docs/architecture.md §11) without any network IO on this worker (§14): the
// catalog's refresher lists servers beside the workers, and this reads
// what it has.
//
// A run about to be claimed (no IO of the current attempt has begun)
// needs every server's listing fetched since it became startable (the
// instant this process first saw it so, mcpWants), so a schema that
// changed while it waited is what its calls are bound and re-checked
// against. When a listing is not that fresh the refresh is asked for and
// the run starts no IO meanwhile: sc.noIO, and it is woken when the
// refresh ends (mcpWakeSource; a later requeue backs that up). The wait
// is silent while the refresh is simply under way; unavailable, shown as
// Ready=False MCPServerUnavailable, says why once the server has failed
// (naming the tool, the server and its last error) or has not answered
// within the listing timeout. Elsewhere the last listing read stands in
// (it only has to check calls already bound) and is refreshed in the
// background once older than tools.DefaultMCPListTTL.
func (r *AgentRunReconciler) mcpListings(ctx context.Context, sc *scope) (listings map[string]*loop.MCPListing, unavailable string) {
	if r.Tools == nil || !hasMCP(&sc.agent.Spec) {
		r.mem.mcpWants.forget(sc.key)
		return nil, ""
	}
	claim := startable(sc.status.Phase)
	need := tools.MCPNeed{After: sc.now.Add(-tools.DefaultMCPListTTL)}
	if claim {
		need = tools.MCPNeed{After: r.mem.mcpWants.since(sc, sc.now), Waiter: mcplist.Waiter{Kind: tools.WaiterRun, NamespacedName: sc.key}}
	} else {
		r.mem.mcpWants.forget(sc.key)
	}
	listings, waits := r.Tools.MCPListings(ctx, sc.key.Namespace, &sc.agent.Spec, need)
	if len(waits) == 0 || !claim && len(listings) == countMCP(&sc.agent.Spec) {
		return listings, ""
	}
	sc.noIO = true
	sc.requeueAfter = r.mcpRecheck(waits, sc.now)
	waited := sc.now.Sub(need.After) // a claim waits since the run became startable
	if !claim {
		waited = 0
		if w := waits[0]; w.Pending {
			waited = sc.now.Sub(w.PendingSince)
		}
	}
	return listings, r.mcpWaitMessage(waits, waited)
}

// mcpWaitMessage is why the run waits for its first waiting tool, or ""
// while its refresh is simply under way (no status write for a wait that
// ends in milliseconds). It says the same for as long as the server fails
// the same way, so a run waiting on a server that is down costs no write
// per retry.
func (r *AgentRunReconciler) mcpWaitMessage(waits []tools.MCPWait, waited time.Duration) string {
	const tail = "; the run starts no tool or model IO until the server answers tools/list"
	for _, w := range waits {
		if w.Err != nil {
			retry := ""
			if !w.RetryAt.IsZero() {
				retry = fmt.Sprintf(" (asked again with backoff, at most %s apart)", r.Tools.MCP.Bounds().BackoffCap)
			}
			return fmt.Sprintf("tool %q: %v%s%s", w.Tool, w.Err, retry, tail)
		}
	}
	if waited > r.Tools.MCP.Bounds().Timeout+time.Second {
		return fmt.Sprintf("tool %q: the MCP server %s has not answered tools/list yet (its listing waits for a free slot or is in flight)%s",
			waits[0].Tool, waits[0].URL, tail)
	}
	return ""
}

// mcpRecheck is when a waiting run looks again if nothing woke it: at the
// end of a server's backoff, once a refresh under way must have ended, or
// (a header Secret missing: nothing wakes the run when it appears) after
// mcpRetry.
func (r *AgentRunReconciler) mcpRecheck(waits []tools.MCPWait, now time.Time) time.Duration {
	var next time.Duration
	for i, w := range waits {
		d := mcpRetry
		switch {
		case w.Pending:
			d = r.Tools.MCP.Bounds().Timeout + time.Second
		case !w.RetryAt.IsZero():
			d = max(w.RetryAt.Sub(now), 0) + 20*time.Millisecond
		}
		if i == 0 || d < next {
			next = d
		}
	}
	return next
}

func hasMCP(a *exagentv1.AgentSpec) bool { return countMCP(a) > 0 }

func countMCP(a *exagentv1.AgentSpec) int {
	n := 0
	for i := range a.Tools {
		if a.Tools[i].MCP != nil {
			n++
		}
	}
	return n
}

// releaseListings gives the release the mcp listings a model answer it
// records is checked against: the last read, however old (a release
// starts no IO, so a stale listing is enough to admit the calls the next
// owner will re-check at its claim). It asks for no refresh: the manager
// is stopping.
func (r *AgentRunReconciler) releaseListings(ctx context.Context, namespace string, agent *exagentv1.AgentSpec) map[string]*loop.MCPListing {
	if r.Tools == nil || !hasMCP(agent) {
		return nil
	}
	listings, _ := r.Tools.MCPListings(ctx, namespace, agent, tools.MCPNeed{Cached: true})
	return listings
}

// mcpWakeSource is the channel through which the catalog's refresher
// wakes the runs that waited for a listing. A wake is a hint: when the
// channel is full it is dropped, and the run's own requeue (mcpRecheck)
// brings it back; the refresher never blocks on a busy controller.
func (r *AgentRunReconciler) mcpWakeSource() source.Source {
	r.listed = make(chan event.GenericEvent, 1024)
	if r.Tools != nil && r.Tools.MCP != nil {
		r.Tools.MCP.SetWake(tools.WaiterRun, func(runs []types.NamespacedName) {
			for _, k := range runs {
				ev := event.GenericEvent{Object: &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace}}}
				select {
				case r.listed <- ev:
				default:
				}
			}
		})
	}
	return source.Channel(r.listed, &handler.EnqueueRequestForObject{})
}

// mcpWants remembers, for each run this process is about to claim, the
// instant it first saw the run startable in its current episode (the same
// phase, revision and claim count): the instant its claim's listings must
// be fetched after. Memory only: a process that starts later sees the run
// startable later, which only asks for a fresher listing. An entry goes
// when the run is claimed, ends or is deleted.
type mcpWants struct {
	mu sync.Mutex
	m  map[types.NamespacedName]mcpWant
}

type mcpWant struct {
	uid                types.UID
	phase              exagentv1.RunPhase
	revision, attempts int64
	since              time.Time
}

// since returns the instant the run's current startable episode began,
// as this process saw it (now when this is the first look).
func (w *mcpWants) since(sc *scope, now time.Time) time.Time {
	phase := sc.status.Phase
	if phase == "" {
		phase = exagentv1.PhaseQueued // a new run is started and claimed on the same listing
	}
	want := mcpWant{uid: sc.run.UID, phase: phase, revision: sc.status.Revision, attempts: sc.status.Attempts, since: now}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]mcpWant{}
	}
	if had, ok := w.m[sc.key]; ok && had.uid == want.uid && had.phase == want.phase &&
		had.revision == want.revision && had.attempts == want.attempts {
		return had.since
	}
	w.m[sc.key] = want
	return now
}

func (w *mcpWants) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}
