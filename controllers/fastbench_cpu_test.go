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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat
// (100 on every Linux this runs on).
const clockTicks = 100

// cpuSeconds is the CPU time (user + system) process pid has used so far.
func cpuSeconds(b *testing.B, pid int) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(b, err)
	// The command name (field 2) may hold spaces: the fields after it.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err := strconv.ParseFloat(fields[11], 64)
	must(b, err)
	stime, err := strconv.ParseFloat(fields[12], 64)
	must(b, err)
	return (utime + stime) / clockTicks
}

// controlPlanePIDs finds the envtest's kube-apiserver and etcd: child
// processes of this test binary, by their command name.
func controlPlanePIDs(b *testing.B) (apiserver, etcd int) {
	b.Helper()
	entries, err := os.ReadDir("/proc")
	must(b, err)
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+2:])
		if ppid, _ := strconv.Atoi(fields[1]); ppid != self {
			continue
		}
		switch s[open+1 : end] {
		case "kube-apiserver":
			apiserver = pid
		case "etcd":
			etcd = pid
		}
	}
	if apiserver == 0 || etcd == 0 {
		b.Fatalf("no kube-apiserver (%d) or etcd (%d) child of this process", apiserver, etcd)
	}
	return apiserver, etcd
}

// cpuMeter reads the CPU seconds of the apiserver, etcd and the manager
// process, and subtracts what they spend idle (the baseline rate × the
// phase's wall time).
type cpuMeter struct {
	b     *testing.B
	pids  [3]int
	idle  [3]float64 // CPU s per wall s when nothing runs
	start [3]float64
	t0    time.Time
}

var cpuNames = [3]string{"apiserver", "etcd", "manager"}

func (m *cpuMeter) read() [3]float64 {
	var out [3]float64
	for i, pid := range m.pids {
		out[i] = cpuSeconds(m.b, pid)
	}
	return out
}

func (m *cpuMeter) begin() { m.start, m.t0 = m.read(), time.Now() }

// end is the CPU seconds each process used since begin, the idle baseline
// subtracted, and the wall time.
func (m *cpuMeter) end() ([3]float64, time.Duration) {
	now, wall := m.read(), time.Since(m.t0)
	var out [3]float64
	for i := range out {
		out[i] = max(0, now[i]-m.start[i]-m.idle[i]*wall.Seconds())
	}
	return out, wall
}

// probeWrites is the plain 2 KiB status write: casWriters writers, each
// on its own run whose status is a phase and one 1.5 KB message (the
// unit of measureCAS), n writes in all. It returns the writes made.
func probeWrites(b *testing.B, ns string, n int) int {
	c := benchClient(b)
	spec := exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "none"}, Input: "x"}
	status := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Attempts: 1}
	pad := strings.Repeat("x", 1500)
	each := n / casWriters
	writeCeiling(b, c, ns, "cpu-probe", spec, status, each, func(s *exagentv1.AgentRunStatus, j int) { s.Message = pad + strconv.Itoa(j) })
	return each * casWriters
}

// statusWrites is the manager process's exagent_status_writes_total (all
// results).
func (p *managerProcess) statusWrites(b *testing.B) float64 {
	b.Helper()
	mf, err := p.scrape()
	must(b, err)
	w := 0.0
	for _, m := range mf["exagent_status_writes_total"].GetMetric() {
		w += m.GetCounter().GetValue()
	}
	return w
}

// waitSucceeded polls the manager process's exagent_runs gauge (its cache,
// not the apiserver) until n runs of ns have succeeded.
func (p *managerProcess) waitSucceeded(b *testing.B, ns string, n int, timeout time.Duration) {
	b.Helper()
	done := 0.0
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		mf, err := p.scrape()
		if err != nil {
			return false, nil
		}
		done = 0
		for _, m := range mf["exagent_runs"].GetMetric() {
			if label(m, "namespace") != ns {
				continue
			}
			phase := exagentv1.RunPhase(label(m, "phase"))
			if phase.IsTerminal() && phase != exagentv1.PhaseSucceeded && m.GetGauge().GetValue() > 0 {
				return false, fmt.Errorf("%.0f runs ended %s (manager log: %s)", m.GetGauge().GetValue(), phase, p.Log)
			}
			if phase == exagentv1.PhaseSucceeded {
				done = m.GetGauge().GetValue()
			}
		}
		return done >= float64(n), nil
	})
	if err != nil {
		b.Fatalf("waiting for %d runs of %s to succeed (%.0f did): %v", n, ns, done, err)
	}
}

// apiserverProfile saves the apiserver's CPU profile over seconds (its
// /debug/pprof, served to the envtest's admin: --profiling defaults to
// true) to path; done is closed when it is written.
func apiserverProfile(b *testing.B, seconds int, path string) (done chan struct{}) {
	done = make(chan struct{})
	cs, err := kubernetes.NewForConfig(env().Config)
	must(b, err)
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+60)*time.Second)
		defer cancel()
		rc, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).Stream(ctx)
		if err != nil {
			b.Logf("no apiserver CPU profile: %v", err)
			return
		}
		defer rc.Close()
		f, err := os.Create(path)
		if err != nil {
			b.Logf("no apiserver CPU profile: %v", err)
			return
		}
		defer f.Close()
		if _, err := io.Copy(f, rc); err != nil {
			b.Logf("apiserver CPU profile %s: %v", path, err)
			return
		}
		b.Logf("apiserver CPU profile: %s", path)
	}()
	return done
}

// BenchmarkFastApiserverCPU is what an agent step costs the apiserver
// the cluster shares (issue 27): the CPU seconds of the envtest's
// kube-apiserver and etcd and of the manager running as its own process
// (cmd/manager, /proc/PID/stat of each), an idle baseline subtracted, per
// status write the manager made, for (a) -fast.cpu-short runs of two
// allowed calls and (b) -fast.slow-runs runs of loadTurns turns whose
// model answers after -fast.slow-delay; each as a ratio to the same
// figure for the plain 2 KiB status write (measureCAS's unit, written by
// casWriters writers) on the same apiserver in the same run. Everything
// the runs cause counts (creates through admission, status writes, reads,
// reviews, Events); the divisor is the status writes. The apiserver's CPU
// profile of (b) is saved in -fast.profiles.
func BenchmarkFastApiserverCPU(b *testing.B) {
	h := benchNamespace(b, "fast-cpu")
	bt := newBenchTools(b, nil)
	api, etcd := controlPlanePIDs(b)
	p := startManagerProcess(b)
	p.waitQuiet(b, 3*time.Second, 5*time.Minute)
	m := &cpuMeter{b: b, pids: [3]int{api, etcd, p.Pid()}}

	// Idle baseline: nothing written for a few seconds.
	m.begin()
	idleFor := 5 * time.Second
	time.Sleep(idleFor) // the idle phase is measured wall time, not a sync
	used, wall := m.end()
	for i := range used {
		m.idle[i] = used[i] / wall.Seconds()
	}
	b.Logf("idle: apiserver %.3f, etcd %.3f, manager %.3f CPU-s/s", m.idle[0], m.idle[1], m.idle[2])

	b.ResetTimer()
	// The probe: plain 2 KiB status writes.
	m.begin()
	pw := probeWrites(b, h.ns, *fastCPUProbe)
	probe, probeWall := m.end()
	perProbe := func(i int) float64 { return probe[i] / float64(pw) * 1000 }
	b.Logf("probe: %d plain 2 KiB status writes in %s (%.0f/s): apiserver %.2f ms, etcd %.2f ms per write",
		pw, probeWall.Round(time.Millisecond), float64(pw)/probeWall.Seconds(), perProbe(0), perProbe(1))
	b.ReportMetric(perProbe(0), "probe-apiserver-ms/w")
	b.ReportMetric(perProbe(1), "probe-etcd-ms/w")

	load := func(tag string, n int, setup func(*harness), mutate func(*exagentv1.AgentRunSpec), profilePath string) {
		lh := benchNamespace(b, "fast-cpu-"+tag)
		setup(lh)
		w0 := p.statusWrites(b)
		var prof chan struct{}
		m.begin()
		if profilePath != "" {
			prof = apiserverProfile(b, 20, profilePath)
		}
		createRuns(b, lh, "r", n, mutate)
		p.waitSucceeded(b, lh.ns, n, 15*time.Minute)
		used, wall := m.end()
		writes := p.statusWrites(b) - w0
		if prof != nil {
			<-prof
		}
		per := func(i int) float64 { return used[i] / writes * 1000 }
		for i, name := range cpuNames {
			b.ReportMetric(per(i), tag+"-"+name+"-ms/w")
			b.ReportMetric(used[i], tag+"-"+name+"-cpu-s")
		}
		b.ReportMetric(per(0)/perProbe(0), tag+"-apiserver/probe")
		b.ReportMetric(per(1)/perProbe(1), tag+"-etcd/probe")
		b.ReportMetric(writes/float64(n), tag+"-writes/run")
		b.ReportMetric(wall.Seconds(), tag+"-wall-s")
		b.Logf("%s: %d runs in %s, %.0f status writes (%.1f/run); CPU-s apiserver %.1f, etcd %.1f, manager %.1f; per write apiserver %.2f ms (%.2f× the probe), etcd %.2f ms (%.2f×), manager %.2f ms",
			tag, n, wall.Round(time.Millisecond), writes, writes/float64(n), used[0], used[1], used[2],
			per(0), per(0)/perProbe(0), per(1), per(1)/perProbe(1), per(2))
	}

	load("short", *fastCPUShort, func(lh *harness) { shortAgent(lh, bt.srv.URL, 2) }, nil, "")
	var modelConns connCounter
	ms := benchModel(b, *fastSlowDelay, &modelConns)
	load("slow", *fastSlow, func(lh *harness) {
		lh.createAgent("a", exagentv1.AgentSpec{
			Model:  exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "load", BaseURL: ms.URL + "/v1"},
			Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("t", bt.srv.URL+"/t")},
			Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
		})
	}, func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "30s" }, filepath.Join(profilesDir(b), "BenchmarkFastApiserverCPU.slow.apiserver.cpu.pprof"))
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}
