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
	"flag"
	"fmt"
	"runtime"
	"strings"
	"time"
)

var flagStrict = flag.Bool("scale.strict", true, "Fail the test when a target is missed (a development run at a small size may not meet the ratios: -scale.strict=false).")

const (
	mib = 1 << 20
	kib = 1 << 10
)

// Targets (docs/operating.md "Scale test").
const (
	targetSteady   = 0.9  // status writes/s ÷ the workload's ceiling
	targetShare    = 0.40 // a shard's RSS and CPU ÷ the unsharded manager's
	targetList     = 2 * time.Second
	failoverMargin = 10 * time.Second
)

// probeResult is the write ceiling.
type probeResult struct {
	writes              int
	wall                time.Duration
	ceiling             float64 // writes/s
	apiserverMs, etcdMs float64 // CPU per write
	apiserverCPU        float64 // CPU-s/s while writing
}

// restart is a manager that exited on its own and was started again.
type restart struct {
	at      time.Duration
	manager string
	why     string
}

// burstResult is one creation burst.
type burstResult struct {
	what string
	runs int
	wall time.Duration
}

// report is everything TestScale measured.
type report struct {
	sizes   sizes
	started time.Time
	wall    time.Duration
	lease   time.Duration
	sharded bool

	probe   probeResult
	idleRSS float64
	burst   []burstResult
	settle  time.Duration
	// liveStarted are the running runs that started (asked the model twice).
	liveStarted int

	list, inbox, inboxFirst time.Duration

	windows  []window
	restarts []restart
	failover *failoverResult
	oracle   oracleResult
	etcd     etcdSize
}

// The derived figures of a window.
func (w window) secs() float64            { return w.wall.Seconds() }
func (w window) writesPerSec() float64    { return w.statusWrites / w.secs() }
func (w window) stepsPerSec() float64     { return w.steps / w.secs() }
func (w window) apiserverMsPerW() float64 { return w.apiserverCPU / w.statusWrites * 1000 }
func (w window) etcdMsPerW() float64      { return w.etcdCPU / w.statusWrites * 1000 }
func (w window) writesPerStep() float64 {
	if w.steps == 0 {
		return 0
	}
	return w.statusWrites / w.steps
}

// modelMax is the steps/s the slow model allows: every running run asks
// it once per step and waits its mean answer time.
func (r *report) modelMax() float64 {
	return float64(r.liveStarted) / ((*flagModelMin + *flagModelMax) / 2).Seconds()
}

// ceilings of a window's workload, in status writes/s: what the model's
// pace allows (its steps at the model's maximum times this workload's
// writes per step), what the apiserver allows (the probe's ceiling scaled
// by the apiserver's CPU per write of this workload against the probe's),
// and the lower of the two — the one the throughput is compared with.
func (r *report) ceilings(w window) (model, apiserver, workload float64) {
	model = r.modelMax() * w.writesPerStep()
	apiserver = r.probe.ceiling * r.probe.apiserverMs / w.apiserverMsPerW()
	return model, apiserver, min(model, apiserver)
}

func (w window) managerSummary() string {
	var parts []string
	for _, m := range w.managers {
		parts = append(parts, fmt.Sprintf("%s %.2f CPU-s/s %.2f ms/write RSS %.0f MiB %0.f runs cached", m.name, m.cpu/w.secs(),
			m.cpu/max(m.writes, 1)*1000, m.rss/mib, m.cachedRuns))
	}
	return strings.Join(parts, "; ")
}

// sharedWindows are the sharded windows and the unsharded one (nil when
// it was not measured).
func (r *report) sharedWindows() (sharded []window, unsharded *window) {
	for i := range r.windows {
		if r.windows[i].name == "unsharded" {
			unsharded = &r.windows[i]
		} else {
			sharded = append(sharded, r.windows[i])
		}
	}
	return sharded, unsharded
}

// shareOf is shard i's mean RSS and CPU-s/s over the sharded windows.
func shareOf(sharded []window, i int) (rss, cpu float64) {
	n := 0
	for _, w := range sharded {
		if i < len(w.managers) {
			rss += w.managers[i].rss
			cpu += w.managers[i].cpu / w.secs()
			n++
		}
	}
	return rss / float64(n), cpu / float64(n)
}

// missed are the targets this run did not meet.
func (r *report) missed() []string {
	if !*flagStrict {
		return nil
	}
	var out []string
	sharded, unsharded := r.sharedWindows()
	for _, w := range r.windows {
		if w.notResumed > 0 {
			out = append(out, fmt.Sprintf("window %s: %d running runs had not resumed when it began", w.name, w.notResumed))
		}
	}
	for _, w := range sharded {
		if _, _, c := r.ceilings(w); w.writesPerSec() < targetSteady*c {
			out = append(out, fmt.Sprintf("window %s: %.0f status writes/s < %.1f × the workload's ceiling %.0f", w.name, w.writesPerSec(), targetSteady, c))
		}
	}
	if unsharded != nil {
		u := unsharded.managers[0]
		for i := range r.sizes.shards {
			rss, cpu := shareOf(sharded, i)
			if rss > targetShare*u.rss {
				out = append(out, fmt.Sprintf("shard %d's RSS %.0f MiB > %.2f × the unsharded manager's %.0f MiB", i, rss/mib, targetShare, u.rss/mib))
			}
			if ucpu := u.cpu / unsharded.secs(); cpu > targetShare*ucpu {
				out = append(out, fmt.Sprintf("shard %d's CPU %.2f CPU-s/s > %.2f × the unsharded manager's %.2f", i, cpu, targetShare, ucpu))
			}
		}
	}
	if r.liveStarted < r.sizes.running {
		out = append(out, fmt.Sprintf("%d of %d running runs started", r.liveStarted, r.sizes.running))
	}
	for _, re := range r.restarts {
		out = append(out, fmt.Sprintf("manager %s exited on its own at %s: %s", re.manager, re.at.Round(time.Second), re.why))
	}
	if r.list > targetList {
		out = append(out, fmt.Sprintf("kubectl approve list -A took %s > %s", r.list.Round(time.Millisecond), targetList))
	}
	if f := r.failover; f != nil && f.total > r.lease+failoverMargin {
		out = append(out, fmt.Sprintf("failover took %s > %s", f.total.Round(time.Millisecond), r.lease+failoverMargin))
	}
	return out
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// markdown is the report: the headline table (one row per figure the
// brief of `make scale` asks for), then each window in detail.
func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	sz := r.sizes
	mode := "real shards (`--shard`, `--shards`, one leader-election Lease per shard)"
	if !r.sharded {
		mode = "the manager has no `--shard` yet: as many unsharded managers, no leader election, each caching every run"
	}
	p("## Scale test\n\n")
	p("%s, %s; %s. %s/%s, %d CPUs; %s; model answers %s–%s; leases %s; window %s.\n\n",
		sz, r.started.UTC().Format("2006-01-02 15:04 UTC"), mode, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		fmt.Sprintf("wall %s", r.wall.Round(time.Second)), *flagModelMin, *flagModelMax, r.lease, *flagWindow)
	p("Write ceiling, measured first: %d plain 2 KiB CAS status writes on a schemaless custom resource by %d writers in %s = **%.0f writes/s**; the apiserver's CPU %.2f ms and etcd's %.2f ms per write.\n\n",
		r.probe.writes, probeWriters, r.probe.wall.Round(time.Millisecond), r.probe.ceiling, r.probe.apiserverMs, r.probe.etcdMs)

	p("| # | Figure | Measured | Ratio | Target | Met |\n|---|---|---|---|---|---|\n")
	total, wall := 0, time.Duration(0)
	for _, bu := range r.burst {
		total += bu.runs
		wall += bu.wall
		rate := float64(bu.runs) / bu.wall.Seconds()
		p("| 1 | creation burst: %d %s runs, %d clients | %.0f runs/s | %.2f × ceiling | — | |\n", bu.runs, bu.what, sz.creators, rate, rate/r.probe.ceiling)
	}
	if total > 0 {
		rate := float64(total) / wall.Seconds()
		p("| 1 | creation burst: all %d runs | %.0f runs/s | %.2f × ceiling | — | |\n", total, rate, rate/r.probe.ceiling)
		p("| 1 | ended and waiting runs settled after the burst | %s | | — | |\n", r.settle.Round(time.Second))
		p("| 2 | running runs that started (the rest stayed queued) | %d of %d | | all | %s |\n", r.liveStarted, sz.running, met(r.liveStarted == sz.running))
	}
	sharded, unsharded := r.sharedWindows()
	for _, w := range r.windows {
		tag := w.name
		mc, ac, c := r.ceilings(w)
		p("| 2 | %s: status writes/s of the %d started running runs | %.0f | %.2f × ceiling; %.2f × workload ceiling %.0f (model %.0f, apiserver %.0f) | ≥ %.1f × workload ceiling | %s |\n",
			tag, r.liveStarted, w.writesPerSec(), w.writesPerSec()/r.probe.ceiling, w.writesPerSec()/c, c, mc, ac, targetSteady,
			metIf(w.name != "unsharded", w.writesPerSec() >= targetSteady*c))
		p("| 2 | %s: steps/s (%.2f status writes a step) | %.1f | %.2f × the model's max %.0f | — | |\n",
			tag, w.writesPerStep(), w.stepsPerSec(), w.stepsPerSec()/r.modelMax(), r.modelMax())
		p("| 2 | %s: the machine's CPU (this test's processes; the rest is other work on the machine) | %.2f CPU-s/s (%.2f) | of %d | — | |\n",
			tag, w.machineCPU/w.secs(), w.ownCPU/w.secs(), runtime.NumCPU())
		if w.notResumed > 0 {
			p("| 2 | %s: running runs not resumed when the window began | %d | | 0 | **no** |\n", tag, w.notResumed)
		}
		p("| 3 | %s: apiserver CPU per status write | %.2f ms | %.2f × probe | — | |\n", tag, w.apiserverMsPerW(), w.apiserverMsPerW()/r.probe.apiserverMs)
		p("| 3 | %s: the apiserver's requests per status write (all clients) | %s | | — | |\n", tag, w.requestsPerWrite(6))
		p("| 3 | %s: etcd CPU per status write | %.2f ms | %.2f × probe | — | |\n", tag, w.etcdMsPerW(), w.etcdMsPerW()/r.probe.etcdMs)
		for _, m := range w.managers {
			p("| 3 | %s: %s CPU per its status write | %.2f ms (%.2f CPU-s/s, %.0f writes/s) | %.2f × probe's apiserver | — | |\n", tag, m.name,
				m.cpu/max(m.writes, 1)*1000, m.cpu/w.secs(), m.writes/w.secs(), m.cpu/max(m.writes, 1)*1000/r.probe.apiserverMs)
			p("| 4 | %s: %s RSS per cached run | %.1f KiB (RSS %.0f MiB, %.0f runs; %.1f KiB/run above idle %.0f MiB) | | — | |\n", tag, m.name,
				m.rss/max(m.cachedRuns, 1)/kib, m.rss/mib, m.cachedRuns, (m.rss-m.idleRSS)/max(m.cachedRuns, 1)/kib, m.idleRSS/mib)
		}
	}
	if unsharded != nil && len(sharded) > 0 {
		u := unsharded.managers[0]
		ucpu := u.cpu / unsharded.secs()
		for i := range sz.shards {
			rss, cpu := shareOf(sharded, i)
			p("| 5 | shard-%d ÷ unsharded: RSS | %.0f / %.0f MiB | %.2f | ≤ %.2f | %s |\n", i, rss/mib, u.rss/mib, rss/u.rss, targetShare, met(rss <= targetShare*u.rss))
			p("| 5 | shard-%d ÷ unsharded: CPU | %.2f / %.2f CPU-s/s | %.2f | ≤ %.2f | %s |\n", i, cpu, ucpu, cpu/ucpu, targetShare, met(cpu <= targetShare*ucpu))
		}
	}
	if r.list > 0 {
		p("| 6 | `kubectl approve list -A` as alice, %d waiting (median of %d) | %s | | ≤ %s | %s |\n", sz.waiting, *flagListRuns, r.list.Round(time.Millisecond), targetList, met(r.list <= targetList))
		p("| 6 | inbox page `GET /` (kubectl approve ui -A), %d approvals (median; first visit %s) | %s | | — | |\n", sz.waiting, r.inboxFirst.Round(time.Millisecond), r.inbox.Round(time.Millisecond))
	}
	p("| 7 | etcd size: db file / total / in use | %.0f / %.0f / %.0f MiB | %.1f KiB a run | — | |\n", r.etcd.file/mib, r.etcd.total/mib, r.etcd.inUse/mib, r.etcd.total/float64(sz.total())/kib)
	if f := r.failover; f != nil {
		if f.notApplied > 0 || f.notResumed > 0 {
			p("| 8 | failover: approvals not applied, running runs not resumed at the deadline | %d, %d | | 0, 0 | **no** |\n", f.notApplied, f.notResumed)
		}
		p("| 8 | failover of %s (%d running runs, %d model calls in flight at the kill; %d approvals during the outage, the last %s after the kill): all resumed and applied | %s | resumed %s (stepped %s), applied %s, replacement up %s | ≤ lease + 10 s = %s | %s |\n",
			f.victim, f.live, f.inflight, f.approvals, f.lastApproval.Round(time.Millisecond), f.total.Round(time.Millisecond),
			f.resumed.Round(time.Millisecond), f.stepped.Round(time.Millisecond), f.applied.Round(time.Millisecond), f.replacementReady.Round(time.Millisecond),
			r.lease+failoverMargin, met(f.total <= r.lease+failoverMargin))
		cache := fmt.Sprintf("%.0f runs", f.replacementCache)
		if f.shardRuns > 0 {
			cache += fmt.Sprintf(" (its shard: %.0f of %d)", f.shardRuns, sz.total())
		}
		p("| 8 | the replacement's cache at start-up | %s | %.2f of the cluster | its shard only | %s |\n", cache, f.replacementCache/float64(sz.total()),
			metIf(r.sharded, f.shardRuns > 0 && f.replacementCache <= f.shardRuns))
	}
	for _, re := range r.restarts {
		p("| — | a manager exited on its own and was restarted: %s at %s | %s | | none | **no** |\n", re.manager, re.at.Round(time.Second), strings.ReplaceAll(re.why, "|", "/"))
	}
	p("| 8 | duplicate effects (tool server journal, %d idempotency keys, %d charges, %d idempotent re-sends) | %d | | 0 | %s |\n",
		r.oracle.keys, r.oracle.charges, r.oracle.resent, r.oracle.duplicates, met(r.oracle.duplicates == 0))
	p("| 8 | runs in a failed phase (Failed, Uncertain, Denied, Expired, Cancelled) | %.0f | | 0 | %s |\n", r.oracle.failed, met(r.oracle.failed == 0))
	return b.String()
}

// metIf is met(ok) for a row with a target, "—" for one without.
func metIf(has, ok bool) string {
	if !has {
		return "—"
	}
	return met(ok)
}
