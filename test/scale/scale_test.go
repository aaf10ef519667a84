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
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/test/chaos"
)

// probeWriters and probeEach size the write ceiling's measurement: as
// many writers as controllers/fastbench's (casWriters), each writing its
// object 200 times.
const (
	probeWriters = 32
	probeEach    = 200
)

// scaleRun is the state of TestScale.
type scaleRun struct {
	t     *testing.T
	ctx   context.Context
	sz    sizes
	start time.Time

	pl    *plane
	cp    *controlPlane
	model *slowModel
	tools *chaos.ToolServer
	nss   []string

	// sharded: the manager has --shard; shards are their names.
	sharded bool
	shards  []string
	// active are the managers running now; disjoint says each caches only
	// its shard (their gauges add up), otherwise each sees every run.
	active   []*manager
	disjoint bool
	// mu serialises alive, which the supervisor also calls.
	mu      sync.Mutex
	idleRSS float64

	live []client.ObjectKey
	// notResumed are the running runs that had not resumed when the
	// window after a swap began.
	notResumed int
	rep        *report
}

func (s *scaleRun) logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf("[%s] %s", time.Since(s.start).Round(time.Second), fmt.Sprintf(format, args...))
}

func (s *scaleRun) fatalf(format string, args ...any) {
	s.t.Helper()
	for _, m := range s.active {
		if err := m.Alive(); err != nil {
			s.t.Logf("%v", err)
		}
	}
	s.t.Fatalf("[%s] %s", time.Since(s.start).Round(time.Second), fmt.Sprintf(format, args...))
}

// TestScale is the published scale test: see doc.go and docs/operating.md.
func TestScale(t *testing.T) {
	sz, err := readSizes()
	if err != nil {
		t.Fatal(err)
	}
	s := &scaleRun{t: t, ctx: context.Background(), sz: sz, start: time.Now(), nss: namespaces(sz.namespaces)}
	s.rep = &report{sizes: sz, started: s.start, lease: *flagLease}
	work, err := os.MkdirTemp("", "exagent-scale-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SCALE_KEEP") != "" {
			t.Logf("logs kept in %s", work)
			return
		}
		_ = os.RemoveAll(work)
	})

	k8sBin, err := testenv.BinaryAssets()
	if err != nil {
		t.Fatal(err)
	}
	bin := &procs.Builder{Dir: filepath.Join(work, "bin")}
	// The manager as the image builds it: its RSS is the one a user's
	// container shows.
	if _, err := bin.Build(procs.ManagerImage, procs.Devcluster, procs.Plugin); err != nil {
		t.Fatal(err)
	}
	if s.sharded, err = shardingSupported(bin.Path("manager")); err != nil {
		t.Fatal(err)
	}
	s.rep.sharded = s.sharded
	for i := range sz.shards {
		s.shards = append(s.shards, fmt.Sprintf("shard-%d", i))
	}
	s.logf("built the manager, devcluster and kubectl-approve; %s; sharding in the manager: %v", sz, s.sharded)

	if s.pl, err = startPlane(filepath.Join(work, "cluster"), bin, k8sBin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range s.active {
			m.Kill()
		}
		if err := s.pl.stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	if s.cp, err = findControlPlane(s.pl); err != nil {
		t.Fatal(err)
	}
	if s.model, err = newSlowModel(*flagModelMin, *flagModelMax); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.model.close)
	// The tool server reads no run: the history check that needs its
	// store bound is test/chaos's, and a quorum read per tool call would
	// add a request per step to the apiserver this test measures.
	if s.tools, err = chaos.NewToolServer(noReader{}); err != nil {
		t.Fatal(err)
	}
	s.tools.Idempotent("/" + toolJournal)
	t.Cleanup(s.tools.Close)
	if err := installFixtures(s.ctx, s.pl.c, s.nss); err != nil {
		t.Fatal(err)
	}
	s.logf("control plane up (apiserver pid %d, etcd pid %d), %d namespaces", s.cp.apiserver, s.cp.etcd, len(s.nss))

	s.probe()
	s.startShards("")
	if err := installAgents(s.ctx, s.pl.c, s.nss, s.model.URL, s.tools.URL); err != nil {
		t.Fatal(err)
	}
	s.burst()
	s.listAndInbox()
	s.startLive()
	s.rep.windows = append(s.rep.windows, s.measure("sharded"))
	if *flagUnsharded {
		s.swap(false)
		s.rep.windows = append(s.rep.windows, s.measure("unsharded"))
		s.swap(true)
		s.rep.windows = append(s.rep.windows, s.measure("sharded again"))
	}
	s.failover()
	s.oracle()
	if es, err := s.cp.etcdSize(s.ctx); err != nil {
		s.logf("etcd size: %v", err)
	} else {
		s.rep.etcd = es
	}
	s.rep.wall = time.Since(s.start)
	md := s.rep.markdown()
	t.Log("\n" + md)
	if err := os.MkdirAll(filepath.Dir(reportPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reportPath(), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	s.logf("report written to %s", reportPath())
	for _, miss := range s.rep.missed() {
		t.Errorf("target missed: %s", miss)
	}
}

// probe measures the apiserver's write ceiling before anything else runs:
// concurrent CAS status writes on a schemaless custom resource, with the
// apiserver's and etcd's CPU per write.
func (s *scaleRun) probe() {
	if err := installProbeCRD(s.pl.admin); err != nil {
		s.fatalf("%v", err)
	}
	// The idle rate of both, subtracted from the probe's CPU.
	a0, _ := cpuSeconds(s.cp.apiserver)
	e0, _ := cpuSeconds(s.cp.etcd)
	t0 := time.Now()
	if err := poll(s.ctx, "an idle baseline", time.Second, time.Minute, func() (bool, error) {
		return time.Since(t0) >= 5*time.Second, nil
	}); err != nil {
		s.fatalf("%v", err)
	}
	a1, _ := cpuSeconds(s.cp.apiserver)
	e1, _ := cpuSeconds(s.cp.etcd)
	idle := time.Since(t0).Seconds()
	idleAPI, idleEtcd := (a1-a0)/idle, (e1-e0)/idle

	a0, _ = cpuSeconds(s.cp.apiserver)
	e0, _ = cpuSeconds(s.cp.etcd)
	n, wall, err := probeWrites(s.ctx, s.pl.admin, s.nss[0], probeWriters, probeEach)
	if err != nil {
		s.fatalf("%v", err)
	}
	a1, _ = cpuSeconds(s.cp.apiserver)
	e1, _ = cpuSeconds(s.cp.etcd)
	p := probeResult{writes: n, wall: wall, ceiling: float64(n) / wall.Seconds(),
		apiserverMs:  (a1 - a0 - idleAPI*wall.Seconds()) / float64(n) * 1000,
		etcdMs:       (e1 - e0 - idleEtcd*wall.Seconds()) / float64(n) * 1000,
		apiserverCPU: (a1 - a0) / wall.Seconds()}
	s.rep.probe = p
	s.logf("write ceiling: %d plain 2 KiB CAS status writes by %d writers in %s = %.0f writes/s; apiserver %.2f ms, etcd %.2f ms CPU per write",
		n, probeWriters, wall.Round(time.Millisecond), p.ceiling, p.apiserverMs, p.etcdMs)
}

// shardSpec is the spec of shard's manager (unsharded managers when the
// binary has no --shard: as many, each serving everything).
func (s *scaleRun) shardSpec(i int, suffix string) managerSpec {
	spec := managerSpec{name: s.shards[i] + suffix, shards: s.shards, sharded: s.sharded}
	if s.sharded {
		spec.shard = s.shards[i]
	}
	return spec
}

// startShards starts one manager per shard, the first alone (it creates
// the decision-signing Secret the others load), and records the idle RSS
// of the first when no run exists yet.
func (s *scaleRun) startShards(suffix string) {
	s.active = nil
	for i := range s.shards {
		m, err := s.pl.startManager(s.shardSpec(i, suffix))
		if err != nil {
			s.fatalf("%v", err)
		}
		s.active = append(s.active, m)
	}
	s.disjoint = s.sharded
	if s.idleRSS == 0 {
		if mem, err := s.active[0].Memory(); err == nil {
			s.idleRSS = float64(mem.RSS)
			s.rep.idleRSS = s.idleRSS
		}
	}
	s.logf("%d managers ready (%s)", len(s.active), managerNames(s.active))
}

func managerNames(ms []*manager) string {
	var names []string
	for _, m := range ms {
		names = append(names, fmt.Sprintf("%s pid %d", m.holder, m.Pid()))
	}
	return strings.Join(names, ", ")
}

// phases are the runs of every phase in the active managers' caches.
func (s *scaleRun) phases() (map[string]float64, float64, error) {
	out := map[string]float64{}
	cached := 0.0
	if err := s.alive(); err != nil {
		return nil, 0, err
	}
	for _, m := range s.active {
		f, err := m.figures()
		if err != nil {
			return nil, 0, err
		}
		for p, v := range f.byPhase {
			if s.disjoint {
				out[p] += v
			} else {
				out[p] = max(out[p], v)
			}
		}
		if s.disjoint {
			cached += f.runs
		} else {
			cached = max(cached, f.runs)
		}
	}
	return out, cached, nil
}

// failedPhases are the phases no run of this test may reach.
var failedPhases = []exagentv1.RunPhase{exagentv1.PhaseFailed, exagentv1.PhaseUncertain, exagentv1.PhaseDenied,
	exagentv1.PhaseExpired, exagentv1.PhaseCancelled}

// waitPhases waits until at least want[phase] runs are in each phase,
// failing at once if a run reaches a failed phase.
func (s *scaleRun) waitPhases(what string, want map[exagentv1.RunPhase]int, timeout time.Duration) {
	var last map[string]float64
	lastLog := time.Now()
	err := poll(s.ctx, what, 2*time.Second, timeout, func() (bool, error) {
		ph, _, err := s.phases()
		if err != nil {
			if strings.Contains(err.Error(), "exited") {
				return false, err
			}
			return false, nil // a slow scrape under load: the next poll
		}
		last = ph
		for _, p := range failedPhases {
			if ph[string(p)] > 0 {
				return false, fmt.Errorf("%.0f runs are %s (%v)", ph[string(p)], p, ph)
			}
		}
		if time.Since(lastLog) > 30*time.Second {
			s.logf("waiting for %s: %v", what, ph)
			lastLog = time.Now()
		}
		for p, n := range want {
			if ph[string(p)] < float64(n) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		s.fatalf("%v (last: %v)", err, last)
	}
}

// burst creates the ended and waiting runs, interleaved, with many
// concurrent clients, and waits until they have ended or wait.
func (s *scaleRun) burst() {
	keys := interleave(runNames(prefixEnded, s.sz.ended, s.nss), runNames(prefixWaiting, s.sz.waiting, s.nss))
	stop := s.supervise()
	wall, err := createRuns(s.ctx, s.pl.admin, keys, s.sz.creators)
	stop()
	if err != nil {
		s.fatalf("the creation burst: %v", err)
	}
	s.rep.burst = append(s.rep.burst, burstResult{what: "ended + waiting", runs: len(keys), wall: wall})
	s.logf("created %d runs (ended and waiting) in %s: %.0f runs/s", len(keys), wall.Round(time.Millisecond), float64(len(keys))/wall.Seconds())
	t0 := time.Now()
	s.waitPhases("the ended runs to end and the waiting ones to wait", map[exagentv1.RunPhase]int{
		exagentv1.PhaseSucceeded: s.sz.ended, exagentv1.PhaseAwaitingApproval: s.sz.waiting}, 40*time.Minute)
	s.rep.settle = time.Since(t0)
	s.logf("%d ended and %d waiting %s after the burst", s.sz.ended, s.sz.waiting, s.rep.settle.Round(time.Second))
}

// startLive creates the running runs and waits until each has asked the
// model twice (it runs), then lets them warm up.
func (s *scaleRun) startLive() {
	s.live = runNames(prefixLive, s.sz.running, s.nss)
	stop := s.supervise()
	wall, err := createRuns(s.ctx, s.pl.admin, s.live, s.sz.creators)
	stop()
	if err != nil {
		s.fatalf("creating the running runs: %v", err)
	}
	s.rep.burst = append(s.rep.burst, burstResult{what: "running", runs: len(s.live), wall: wall})
	s.logf("created %d running runs in %s", len(s.live), wall.Round(time.Millisecond))
	// Each run has started once it asked the model twice. A manager
	// serves the runs it owns before it claims new ones (its work queue's
	// priorities, docs/sizing.md): where the apiserver cannot carry every
	// run at once, the rest stay queued. The wait ends when all started,
	// or when no run started for -scale.start-stall; the report says how
	// many started, and every later figure is about those.
	started, last, lastAt := 0, -1, time.Now()
	err = poll(s.ctx, "the running runs to start", time.Second, 20*time.Minute, func() (bool, error) {
		started = 0
		for _, k := range s.live {
			if s.model.requestsOf(k.String()) >= 2 {
				started++
			}
		}
		if started != last {
			last, lastAt = started, time.Now()
		}
		return started == len(s.live) || time.Since(lastAt) >= *flagStartStall, s.alive()
	})
	if err != nil {
		s.fatalf("%v", err)
	}
	var live []client.ObjectKey
	for _, k := range s.live {
		if s.model.requestsOf(k.String()) >= 2 {
			live = append(live, k)
		}
	}
	s.rep.liveStarted = len(live)
	if len(live) < len(s.live) {
		s.logf("%d of %d running runs started; %d stayed queued (none started for %s): the windows measure the ones that run",
			len(live), len(s.live), len(s.live)-len(live), *flagStartStall)
	} else {
		s.logf("every running run runs")
	}
	s.live = live
	s.warmup(time.Now())
}

// alive restarts a manager that exited on its own, as a Deployment's pod
// is restarted, and records why (the report counts the restarts: a
// manager that exits under load is a finding, not the end of the test).
func (s *scaleRun) alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.active {
		if m.Alive() == nil {
			continue
		}
		s.pl.front.remove(m.webhook)
		why := lastError(m.Tail())
		s.logf("manager %s (pid %d) exited: %v (%s); restarting it", m.name, m.Pid(), m.Err(), why)
		s.rep.restarts = append(s.rep.restarts, restart{at: time.Since(s.start), manager: m.name, why: why})
		spec := m.spec
		spec.name = strings.TrimSuffix(spec.name, " restarted") + " restarted"
		r, err := s.pl.startManager(spec)
		if err != nil {
			return err
		}
		s.active[i] = r
	}
	return nil
}

// supervise restarts managers that exit on their own while the caller
// does something that calls no alive itself (a creation burst, whose
// admission needs a manager); the returned func stops it.
func (s *scaleRun) supervise() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := s.alive(); err != nil {
					s.t.Errorf("restarting a manager: %v", err)
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// lastError is the message of the last error line of a manager's log.
func lastError(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var e struct {
			Level, Msg, Error string
		}
		if json.Unmarshal([]byte(lines[i]), &e) == nil && e.Level == "error" {
			return strings.TrimSpace(e.Msg + ": " + e.Error)
		}
	}
	return "no error logged"
}

// warmup waits -scale.warmup from since, the managers alive.
func (s *scaleRun) warmup(since time.Time) {
	if err := poll(s.ctx, "the warm-up", time.Second, *flagWarmup+time.Minute, func() (bool, error) {
		return time.Since(since) >= *flagWarmup, s.alive()
	}); err != nil {
		s.fatalf("%v", err)
	}
}

// measure is one steady window of -scale.window with the active managers.
func (s *scaleRun) measure(name string) window {
	for range 2 {
		restarts := len(s.rep.restarts)
		w := s.measureOnce(name)
		if len(s.rep.restarts) == restarts {
			return w
		}
		// A manager was restarted in the window: its CPU and writes
		// start again from zero; measure the window again.
		s.logf("a manager restarted during the window %s: measuring it again", name)
		s.warmup(time.Now())
	}
	return s.measureOnce(name)
}

func (s *scaleRun) measureOnce(name string) window {
	steps := func() float64 { return float64(s.model.liveRequests.Load()) }
	models := func() float64 { return float64(s.model.requests.Load()) }
	s0, err := s.cp.sample(s.ctx, s.active, steps, models)
	if err != nil {
		s.fatalf("window %s: %v", name, err)
	}
	if err := poll(s.ctx, "the window "+name, time.Second, *flagWindow+time.Minute, func() (bool, error) {
		return time.Since(s0.at) >= *flagWindow, s.alive()
	}); err != nil {
		s.fatalf("%v", err)
	}
	s1, err := s.cp.sample(s.ctx, s.active, steps, models)
	if err != nil {
		s.fatalf("window %s: %v", name, err)
	}
	w := window{name: name, wall: s1.at.Sub(s0.at), apiserverCPU: s1.apiCPU - s0.apiCPU, etcdCPU: s1.etcd - s0.etcd,
		machineCPU: s1.machine - s0.machine, ownCPU: s1.own - s0.own,
		statusWrites: s1.apiWrites - s0.apiWrites, steps: s1.steps - s0.steps, modelRequests: s1.models - s0.models,
		notResumed: s.notResumed, requests: map[string]float64{}}
	s.notResumed = 0
	for k, v := range s1.reqs {
		w.requests[k] = v - s0.reqs[k]
	}
	for i, m := range s.active {
		mw := managerWindow{name: m.name, cpu: s1.mgrCPU[i] - s0.mgrCPU[i], writes: s1.mgrWrites[i] - s0.mgrWrites[i], idleRSS: s.idleRSS}
		if mem, err := m.Memory(); err == nil {
			mw.rss, mw.anon = float64(mem.RSS), float64(mem.Anon)
		}
		if f, err := m.figures(); err == nil {
			mw.cachedRuns = f.runs
		}
		w.managers = append(w.managers, mw)
	}
	secs := w.wall.Seconds()
	s.logf("window %s (%s): %.0f status writes/s (%.2f of the ceiling), %.1f steps/s; CPU-s/s apiserver %.2f, etcd %.2f, the machine %.2f (this test's processes %.2f); managers: %s",
		name, w.wall.Round(time.Millisecond), w.statusWrites/secs, w.statusWrites/secs/s.rep.probe.ceiling, w.steps/secs,
		w.apiserverCPU/secs, w.etcdCPU/secs, w.machineCPU/secs, w.ownCPU/secs, w.managerSummary())
	s.logf("window %s: apiserver requests per status write: %s", name, w.requestsPerWrite(8))
	return w
}

// swap replaces the active managers: SIGTERM (a rolling update's stop,
// which hands the runs back), then one unsharded manager (toShards false)
// or the shards again; it waits until every running run has asked the
// model again, then warms up.
func (s *scaleRun) swap(toShards bool) {
	var wg sync.WaitGroup
	errs := make([]error, len(s.active))
	for i, m := range s.active {
		wg.Go(func() { errs[i] = s.pl.stopManager(m) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			s.fatalf("%v", err)
		}
	}
	stopped := time.Now()
	if toShards {
		s.startShards(" again")
	} else {
		m, err := s.pl.startManager(managerSpec{name: "unsharded", shards: s.shards, sharded: s.sharded})
		if err != nil {
			s.fatalf("%v", err)
		}
		s.active, s.disjoint = []*manager{m}, false
		s.logf("one unsharded manager ready (%s)", managerNames(s.active))
	}
	took, missing := s.waitResumed(s.live, stopped, *flagLease+2*time.Minute)
	s.notResumed = missing
	if missing > 0 {
		// Recorded with the next window, not fatal: what the window
		// measures is still the managers' throughput, and the report says
		// how many runs it left behind.
		s.logf("%d running runs had not resumed %s after the managers stopped", missing, took.Round(time.Second))
	} else {
		s.logf("every running run resumed within %s after the managers stopped", took.Round(time.Second))
	}
	s.warmup(time.Now())
}

// waitResumed waits until every one of keys has asked the model at or
// after since, or timeout passes; it returns the longest time a run took
// to (or the time waited) and how many had not.
func (s *scaleRun) waitResumed(keys []client.ObjectKey, since time.Time, timeout time.Duration) (time.Duration, int) {
	missing := len(keys)
	err := poll(s.ctx, "the running runs to resume", 500*time.Millisecond, timeout, func() (bool, error) {
		missing = 0
		for _, k := range keys {
			if s.model.firstAfter(k.String(), since).IsZero() {
				missing++
			}
		}
		return missing == 0, s.alive()
	})
	if err != nil && missing == 0 {
		s.fatalf("%v", err)
	}
	if missing > 0 {
		return time.Since(since), missing
	}
	var took time.Duration
	for _, k := range keys {
		took = max(took, s.model.firstAfter(k.String(), since).Sub(since))
	}
	return took, 0
}

// noReader is the tool server's reader of runs: it reads nothing (see
// TestScale).
type noReader struct{}

func (noReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return nil
}

func (noReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }
