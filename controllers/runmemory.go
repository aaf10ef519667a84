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
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/store"
)

// runMemory is everything this process keeps in memory per run, in one
// place. None of it is the truth (the journal in the run's status is):
// it is what lets one process work on a run without re-reading it, and
// all of it must go when the run does, or a run re-created under the same
// name would meet its predecessor's leftovers and a long-lived manager
// would grow with every run it ever served. forget and ended are the only
// ways any of it is dropped for a whole run.
type runMemory struct {
	// turns serializes the work on a run between the reconcile and the
	// decision controller's direct resume (turns.go).
	turns *turns
	// claims are the claims this process knows of and its jobs' lives (claims.go).
	claims *claims
	// owned are the runs this process holds a claim on, for the hand-back at the stop.
	owned *owned
	// inbox holds the finished IO waiting for the owner's next commit (inbox.go).
	inbox *inbox
	// mcpWants is since when a run about to be claimed waits for listings (agentrun_mcp.go).
	mcpWants mcpWants
	// store keeps the copy of each run this process wrote last (Store.Fresher).
	store *store.Store
	// tracer keeps the open span of each run's attempt (nil: no tracing).
	tracer *telemetry.Tracer
	// waits are the model requests waiting for a rate limit (model_waits.go).
	waits modelWaits
	// lastTurns are the last turns this process ended, per conversation (turn_memory.go).
	lastTurns *lastTurns
	// leaving are the runs that left this shard's cache, until it is known
	// whether they were deleted or moved (agentrun_moved.go).
	leaving leaving
}

func newRunMemory(store *store.Store, tracer *telemetry.Tracer) *runMemory {
	return &runMemory{
		turns: newTurns(), claims: newClaims(), inbox: newInbox(), lastTurns: newLastTurns(),
		owned: &owned{runs: map[types.NamespacedName]struct{}{}},
		store: store, tracer: tracer,
	}
}

// forget drops all this process knows of the run named key, which is gone
// (deleted, or not found): its jobs are cancelled, their results
// discarded, its written copy, claim and open span dropped. A turn held
// now is left to its holder, who releases it.
func (m *runMemory) forget(key types.NamespacedName, now time.Time) {
	m.store.Forget(key)
	m.owned.forget(key)
	m.claims.gone(key, "")
	m.inbox.take(key)
	m.tracer.Forget(key, now) // deleted mid-attempt: no commit will end its span
	m.mcpWants.forget(key)
	m.waits.forget(key)
}

// ended drops what only a live run needs: it is no longer owned, and
// waits for no listing. What its late outcomes and its end's
// notifications need stays until it is gone.
func (m *runMemory) ended(key types.NamespacedName) {
	m.owned.forget(key)
	m.mcpWants.forget(key)
}
