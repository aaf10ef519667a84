//go:build scale

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

package scale

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// shardLabel is the label the webhook stamps a run's shard in
// (docs/architecture.md §22).
const shardLabel = exagentv1.LabelShard

// victimIndex is the shard whose manager is killed.
const victimIndex = 1

// approval is one approval alice makes during the outage.
type approval struct {
	run     client.ObjectKey
	uid     types.UID
	a       exagentv1.Approval
	created time.Time
	left    time.Time // first seen out of AwaitingApproval
}

// failover kills the victim shard's manager with SIGKILL while its running
// runs are mid-call, has alice approve -scale.approve of its waiting runs
// during the outage, starts its replacement (which waits for the shard's
// Lease), and measures the time until every running run of the shard has
// asked the model again and every approval made during the outage has
// been applied.
func (s *scaleRun) failover() {
	victim := s.active[victimIndex]
	live, waiting := s.victimRuns(victim)
	if len(live) == 0 {
		s.fatalf("the victim %s owns no running run", victim.name)
	}
	n := min(s.sz.approve, len(waiting))
	approvals := make([]*approval, 0, n)
	for _, k := range waiting[:n] {
		run := &exagentv1.AgentRun{}
		if err := s.pl.alice.Get(s.ctx, k, run); err != nil {
			s.fatalf("alice reads %s: %v", k, err)
		}
		var pending *exagentv1.Approval
		for i := range run.Status.Approvals {
			if run.Status.Approvals[i].State == exagentv1.ApprovalPending {
				pending = &run.Status.Approvals[i]
			}
		}
		if run.Status.Phase != exagentv1.PhaseAwaitingApproval || pending == nil {
			s.fatalf("run %s is %s with no pending approval", k, run.Status.Phase)
		}
		approvals = append(approvals, &approval{run: k, uid: run.UID, a: *pending})
	}
	liveSet := map[string]bool{}
	for _, k := range live {
		liveSet[k.String()] = true
	}
	fo := &failoverResult{victim: victim.name, live: len(live), approvals: len(approvals)}

	// The kill, while the shard's running runs wait on the model.
	fo.inflight = s.model.inFlight(liveSet)
	killed := time.Now()
	s.pl.kill(victim)
	s.logf("killed %s (SIGKILL) with %d of its %d running runs' model requests in flight; %d approvals of its waiting runs follow",
		victim.name, fo.inflight, len(live), len(approvals))

	// alice approves during the outage, 16 at a time, with her own client
	// (the webhook stamps and signs her as the decider).
	var (
		wg      sync.WaitGroup
		next    atomic.Int64
		errOnce sync.Once
		apprErr error
	)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(approvals) {
					return
				}
				ap := approvals[i]
				d := fixture.MakeDecision("approve-"+ap.run.Name, ap.run.Namespace, ap.run.Name).Approve(ap.a).Reason("scale test: approved during the outage").Obj()
				if err := createOne(s.ctx, s.pl.alice, d); err != nil {
					errOnce.Do(func() { apprErr = err })
					return
				}
				ap.created = time.Now()
			}
		})
	}

	// The replacement, as a restarted pod: with leader election it waits
	// for the shard's Lease.
	spec := s.shardSpec(victimIndex, " replacement")
	repl, err := s.pl.startManager(spec)
	if err != nil {
		s.fatalf("%v", err)
	}
	s.active[victimIndex] = repl
	fo.replacementReady = time.Since(killed)
	wg.Wait()
	if apprErr != nil {
		s.fatalf("approving during the outage: %v", apprErr)
	}
	for _, ap := range approvals {
		fo.lastApproval = max(fo.lastApproval, ap.created.Sub(killed))
	}

	// Every running run of the shard resumes (a model request after the
	// kill), every approval is applied (its run leaves AwaitingApproval).
	deadline := *flagLease + 5*time.Minute
	pending := slices.Clone(approvals)
	err = poll(s.ctx, "the shard's runs to resume and its approvals to be applied", 500*time.Millisecond, deadline, func() (bool, error) {
		if err := s.alive(); err != nil {
			return false, err
		}
		var still []*approval
		for _, ap := range pending {
			run := &exagentv1.AgentRun{}
			if err := s.pl.c.Get(s.ctx, ap.run, run); err != nil {
				still = append(still, ap)
				continue
			}
			if run.Status.Phase == exagentv1.PhaseAwaitingApproval {
				still = append(still, ap)
				continue
			}
			ap.left = time.Now()
		}
		pending = still
		if len(pending) > 0 {
			return false, nil
		}
		for _, k := range live {
			if s.model.firstAfter(k.String(), killed).IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		// Recorded, not fatal: the report shows the miss and the rest of
		// the figures are still worth having.
		fo.notApplied = len(pending)
		for _, k := range live {
			if s.model.firstAfter(k.String(), killed).IsZero() {
				fo.notResumed++
			}
		}
		s.t.Errorf("failover: %v: %d approvals not applied, %d running runs not resumed", err, fo.notApplied, fo.notResumed)
	}

	// The times, from the oracles: the model server's arrivals, and each
	// approved call's effect at the tool server (it follows the commit that
	// took the run out of AwaitingApproval).
	journal := s.tools.Journal()
	charged := map[string]time.Time{}
	stepped := map[string]time.Time{}
	for _, r := range journal {
		if r.At.Before(killed) {
			continue
		}
		switch {
		case r.Server == "/"+toolCharge:
			if _, ok := charged[r.Key]; !ok {
				charged[r.Key] = r.At
			}
		case r.Server == "/"+toolJournal && liveSet[r.Run.String()]:
			if _, ok := stepped[r.Run.String()]; !ok {
				stepped[r.Run.String()] = r.At
			}
		}
	}
	for _, k := range live {
		if at := s.model.firstAfter(k.String(), killed); !at.IsZero() {
			fo.resumed = max(fo.resumed, at.Sub(killed))
		}
		if at, ok := stepped[k.String()]; ok {
			fo.stepped = max(fo.stepped, at.Sub(killed))
		} else {
			fo.notStepped++
		}
	}
	for _, ap := range approvals {
		at, ok := charged[string(ap.uid)+"/"+ap.a.CallID]
		if !ok && ap.left.IsZero() {
			continue // not applied: counted in notApplied
		}
		if !ok {
			// Applied (it left AwaitingApproval) but its call not sent yet:
			// the poll's time bounds it.
			at = ap.left
		}
		fo.applied = max(fo.applied, at.Sub(killed))
	}
	fo.total = max(fo.resumed, fo.applied)
	if fo.notApplied > 0 || fo.notResumed > 0 {
		fo.total = time.Since(killed)
	}

	// What the replacement cached: its shard, not the cluster.
	repl = s.active[victimIndex]
	if f, err := repl.figures(); err == nil {
		fo.replacementCache = f.runs
	}
	started := map[client.ObjectKey]bool{}
	for _, k := range s.live {
		started[k] = true
	}
	if s.sharded {
		var meta metav1.PartialObjectMetadataList
		meta.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunList"))
		if err := s.pl.c.List(s.ctx, &meta, client.MatchingLabels{shardLabel: repl.shard}); err == nil {
			fo.shardRuns = float64(len(meta.Items))
		}
	}
	s.rep.failover = fo
	s.logf("failover of %s: replacement ready after %s; every running run resumed after %s (stepped after %s), every approval applied after %s; total %s (target ≤ %s); its cache %0.f runs (its shard %0.f, the cluster %d)",
		victim.name, fo.replacementReady.Round(time.Millisecond), fo.resumed.Round(time.Millisecond), fo.stepped.Round(time.Millisecond),
		fo.applied.Round(time.Millisecond), fo.total.Round(time.Millisecond), *flagLease+10*time.Second,
		fo.replacementCache, fo.shardRuns, s.sz.total())
}

// victimRuns are the started running runs the victim owns (with shards,
// those labelled its shard; otherwise those it holds the claim of) and the
// waiting runs whose approvals it would apply (with shards, its shard's;
// otherwise any: every manager applies them).
func (s *scaleRun) victimRuns(victim *manager) (live, waiting []client.ObjectKey) {
	started := map[client.ObjectKey]bool{}
	for _, k := range s.live {
		started[k] = true
	}
	if s.sharded {
		var meta metav1.PartialObjectMetadataList
		meta.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunList"))
		if err := s.pl.c.List(s.ctx, &meta, client.MatchingLabels{shardLabel: victim.shard}); err != nil {
			s.fatalf("listing the runs of %s: %v", victim.shard, err)
		}
		for _, o := range meta.Items {
			k := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
			switch {
			case strings.HasPrefix(o.Name, prefixLive) && started[k]:
				live = append(live, k)
			case strings.HasPrefix(o.Name, prefixWaiting):
				waiting = append(waiting, k)
			}
		}
	} else {
		for _, k := range s.live {
			run := &exagentv1.AgentRun{}
			if err := s.pl.c.Get(s.ctx, k, run); err != nil {
				s.fatalf("reading %s: %v", k, err)
			}
			if run.Status.Claim != nil && run.Status.Claim.Holder == victim.holder {
				live = append(live, k)
			}
		}
		waiting = runNames(prefixWaiting, s.sz.waiting, s.nss)
	}
	slices.SortFunc(waiting, func(a, b client.ObjectKey) int { return strings.Compare(a.String(), b.String()) })
	return live, waiting
}

// oracle checks the tool server's journal — every effect once per
// idempotency key: a non-idempotent charge never twice, an idempotent
// journal call applied once however often it was re-sent — and that no run
// ended otherwise than it should.
func (s *scaleRun) oracle() {
	type keyStat struct{ arrivals, applied int }
	stats := map[string]*keyStat{}
	server := map[string]string{}
	for _, r := range s.tools.Journal() {
		st := stats[r.Key]
		if st == nil {
			st = &keyStat{}
			stats[r.Key] = st
			server[r.Key] = r.Server
		}
		st.arrivals++
		if r.Applied {
			st.applied++
		}
	}
	o := oracleResult{keys: len(stats)}
	for k, st := range stats {
		if st.applied > 1 {
			o.duplicates++
			s.t.Errorf("duplicate effect: key %s (%s) applied %d times", k, server[k], st.applied)
		}
		if st.arrivals > 1 {
			o.resent++
		}
		if server[k] == "/"+toolCharge {
			o.charges++
		}
	}
	ph, _, err := s.phases()
	if err != nil {
		s.fatalf("%v", err)
	}
	for _, p := range failedPhases {
		o.failed += ph[string(p)]
	}
	s.rep.oracle = o
	s.logf("the tool server's journal: %d keys, %d charges, %d re-sent (idempotent, after the kill), %d applied twice; runs in a failed phase: %.0f (%v)",
		o.keys, o.charges, o.resent, o.duplicates, o.failed, ph)
	if o.failed > 0 {
		s.t.Errorf("%.0f runs ended in a failed phase: %v", o.failed, ph)
	}
}

// failoverResult is the failover's figures, from the kill.
type failoverResult struct {
	victim                                string
	live, approvals, inflight, notStepped int
	notApplied, notResumed                int
	replacementReady, lastApproval        time.Duration
	resumed, stepped, applied, total      time.Duration
	replacementCache, shardRuns           float64
}

// oracleResult is what the journal says.
type oracleResult struct {
	keys, charges, resent, duplicates int
	failed                            float64
}
