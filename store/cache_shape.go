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

package store

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// How the manager's informer cache is shaped, end to end.
//
// The manager watches every AgentRun of the namespaces it serves, and a
// run's status is its journal: up to the hot budget of transcript, calls
// with their arguments and results, receipts (docs/architecture.md §10).
// Kept whole, 10,000 runs waiting for a person would cost the manager
// their transcripts, and most of what it holds it never reads. So the
// cache's transform (CacheOptions, applied to each object as the informer
// receives it, before it is stored or handed to a handler):
//
//  1. strips managedFields from every object (nothing reads them);
//  2. for an ended run, drops what only people and audits read
//     (stripEnded): the transcript, each call's arguments and result;
//  3. for a run waiting for a person (AwaitingApproval, Uncertain, …),
//     keeps only what the controllers read while it waits — phase,
//     approvals and their expiry, calls' ids, states and hashes, claim,
//     notifications, the Ready condition — and marks the copy a summary
//     (summarize, summaryManager).
//
// A summary is never written back: the controllers see from it that
// nothing is due, and whatever a turn would write is computed from the
// run read past the cache (ErrSummary → load with the APIReader); the
// decision controller reads the run past the cache anyway; and
// Store.Commit refuses a summary as the last guard (isSummary). An ended
// run is never written by the run controller; the one write it may take
// (a Resolve of a Cancelled run's Uncertain call, for the record) is made
// on the run read past the cache. Running runs are cached whole: their
// owner reads them at every turn.

// CacheOptions are the informer cache settings of the manager: managedFields
// are stripped from every object, and the bulk of ended and waiting runs —
// the transcript, each call's arguments and result — is dropped (docs/architecture.md
// §8: size is speed; thousands of runs waiting for a human must not cost
// the manager their transcripts). The run controller never reads or writes
// an ended run; the one write an ended run takes (a Resolve of a Cancelled
// run's Uncertain call, for the record) is made on the run read past the
// cache. A waiting run's cached copy is marked a summary (isSummary): the
// controllers see from it that nothing is due, and whatever they write is
// computed from the run read past the cache — the decision controller reads
// it anyway, and Store.Commit refuses a summary — so a stripped copy is
// never stored back.
func CacheOptions() cache.Options {
	strip := cache.TransformStripManagedFields()
	return cache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]cache.ByObject{
			&exagentv1.AgentRun{}: {Transform: func(in any) (any, error) {
				out, err := strip(in)
				if err != nil {
					return out, err
				}
				if run, ok := out.(*exagentv1.AgentRun); ok {
					switch {
					case run.Status.Phase.IsTerminal():
						stripEnded(&run.Status)
					case waiting(run.Status.Phase):
						summarize(run)
					}
				}
				return out, nil
			}},
		},
	}
}

// waiting phases wait for a human, or on the world (a timer, an object, a
// callback): nothing of the transcript is needed until a decision arrives
// or the wait ends (the calls' waits, which say until when, are kept).
func waiting(p exagentv1.RunPhase) bool {
	return p == exagentv1.PhaseAwaitingApproval || p == exagentv1.PhaseUncertain || p == exagentv1.PhaseWaiting
}

// summaryManager marks a cached copy of a run whose journal the cache
// stripped: a managedFields entry of that manager with no operation, which
// the apiserver never returns (every entry it writes has one, and the
// cache strips managedFields before the mark). It exists only in this
// process's cache, and Store.Commit refuses such a copy.
const summaryManager = "exagent.io/cached-summary"

// summaryMark is the managedFields of every summary (shared: read only).
var summaryMark = []metav1.ManagedFieldsEntry{{Manager: summaryManager}}

// summarize keeps of a waiting run what the controllers read while it
// waits — phase, approvals (their expiry), calls' ids, states and hashes,
// claim, notifications, the Ready condition their overrides compare with
// — and marks it a summary. The rest (transcript, arguments, results, the
// other conditions, the binding, receipts) is read past the cache by
// whatever writes the run.
func summarize(run *exagentv1.AgentRun) {
	s := &run.Status
	stripEnded(s)
	s.Binding, s.Receipts = nil, nil
	var ready []metav1.Condition
	for _, c := range s.Conditions {
		if c.Type == exagentv1.ConditionReady {
			ready = []metav1.Condition{c}
		}
	}
	s.Conditions = ready
	run.ManagedFields = summaryMark
}

// IsSummary reports whether run is the cache's summary of a waiting run:
// whatever a controller would write for it must be computed from the run
// read past the cache (ErrSummary).
func IsSummary(run *exagentv1.AgentRun) bool { return isSummary(run) }

// isSummary reports whether run is the cache's summary of a waiting run.
func isSummary(run *exagentv1.AgentRun) bool {
	mf := run.ManagedFields
	return len(mf) == 1 && mf[0].Manager == summaryManager && mf[0].Operation == ""
}

// stripEnded drops what an ended run keeps only for people and audits,
// never for the controllers: the transcript, and every call's arguments and
// result (ids, states, hashes and who resolved what stay).
func stripEnded(s *exagentv1.AgentRunStatus) {
	s.History = nil
	for i := range s.Calls {
		c := &s.Calls[i]
		c.Args = ""
		if c.Outcome != nil {
			c.Outcome.Result = ""
		}
	}
}
