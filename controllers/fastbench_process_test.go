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
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// BenchmarkFastWaitingRunsProcess is BenchmarkFastWaitingRuns measured on
// the manager process alone, as a user sees it (ps, the container's
// memory): cmd/manager is built and started as a child process with its
// default settings (no webhooks, plain-HTTP metrics on loopback), left
// idle for a baseline, then -fast.waiting runs are left waiting for
// approval. It reports the child's VmRSS and VmHWM (/proc), and the heap
// in use and goroutines its own metrics endpoint serves. The manager
// watches every namespace: runs other benchmarks left in this envtest are
// in its cache too (reported as runs-elsewhere; run it alone or first).
func BenchmarkFastWaitingRunsProcess(b *testing.B) {
	n := *fastWaiting
	h := benchNamespace(b, "fast-waiting-proc")
	u := measureCAS(b, h.ns)
	bt := newBenchTools(b, nil)
	approvalAgent(h, bt.srv.URL)

	p := startManagerProcess(b)
	// Idle baseline: the metrics endpoint answers only once the run
	// collector's cache read works (an error is an HTTP 500), then the
	// start-up work (sweep, first reconciles) has settled.
	idle := p.waitQuiet(b, 3*time.Second, 5*time.Minute)
	mem0 := p.memory(b)
	heap0 := gauge(idle, "go_memstats_heap_inuse_bytes")
	elsewhere := 0.0
	for _, m := range idle["exagent_runs"].GetMetric() {
		elsewhere += m.GetGauge().GetValue()
	}

	b.ResetTimer()
	t0 := time.Now()
	createRuns(b, h, "r", n, nil)
	// A slow scrape of that many runs: every 2 s.
	p.waitRuns(b, h.ns, exagentv1.PhaseAwaitingApproval, n, 2*time.Second, 20*time.Minute)
	elapsed := time.Since(t0)
	b.StopTimer()

	// The run controller settles (events sent, queue drained) before the
	// memory is read; the process's own figures first, then its endpoint.
	p.waitQuiet(b, 3*time.Second, 5*time.Minute)
	mem := p.memory(b)
	mf, err := p.scrape()
	must(b, err)
	heap := gauge(mf, "go_memstats_heap_inuse_bytes")
	gor := gauge(mf, "go_goroutines")
	p.heapProfile(b)

	u.report(b)
	delta := mem.RSS - min(mem.RSS, mem0.RSS)
	b.ReportMetric(float64(mem0.RSS)/mib, "rss-idle-MiB")
	b.ReportMetric(float64(mem.RSS)/mib, "rss-MiB")
	b.ReportMetric(float64(mem.Peak)/mib, "rss-peak-MiB")
	b.ReportMetric(float64(delta)/mib, "rss-delta-MiB")
	b.ReportMetric(float64(delta)/float64(n)/1024, "rss-KiB/run")
	b.ReportMetric(float64(mem.Anon)/mib, "rss-anon-MiB")
	b.ReportMetric(float64(mem.File)/mib, "rss-file-MiB")
	b.ReportMetric(heap/mib, "heap-inuse-MiB")
	b.ReportMetric(gor, "goroutines")
	b.ReportMetric(elapsed.Seconds(), "pause-s")
	b.ReportMetric(elsewhere, "runs-elsewhere")
	dropped := 0.0
	for _, m := range mf["exagent_events_dropped_total"].GetMetric() {
		dropped += m.GetCounter().GetValue()
	}
	b.ReportMetric(dropped, "events-dropped")
	b.Logf("Events dropped: %.0f", dropped)
	b.Logf("idle manager: RSS %.1f MiB (anon %.1f, file %.1f), heap in use %.1f MiB, %.0f goroutines",
		float64(mem0.RSS)/mib, float64(mem0.Anon)/mib, float64(mem0.File)/mib, heap0/mib, gauge(idle, "go_goroutines"))
	b.Logf("waiting runs (manager process %d): %d paused in %s; RSS %.1f MiB (anon %.1f, file %.1f; idle %.1f, +%.1f MiB = %.1f KiB/run), peak %.1f MiB; heap in use %.1f MiB (+%.1f), %.0f goroutines; %.0f runs of other namespaces in its cache",
		p.Pid(), n, elapsed.Round(time.Millisecond), float64(mem.RSS)/mib, float64(mem.Anon)/mib, float64(mem.File)/mib,
		float64(mem0.RSS)/mib, float64(delta)/mib, float64(delta)/float64(n)/1024, float64(mem.Peak)/mib,
		heap/mib, (heap-heap0)/mib, gor, elsewhere)
	b.ReportMetric(0, "ns/op")
}

// managerProcess is cmd/manager running as a child of the benchmark.
type managerProcess struct {
	*procs.Process
	metrics string // http://127.0.0.1:PORT
	pprof   string // http://127.0.0.1:PORT (--pprof-bind-address)
	http    *http.Client
	name    string // the benchmark's, for file names
}

// startManagerProcess builds cmd/manager (as the Dockerfile does), writes an admin kubeconfig for
// the envtest and starts the binary with its default settings but for
// what a loopback benchmark needs; the process is killed at cleanup (and
// by the kernel if the benchmark dies first).
func startManagerProcess(b *testing.B, extra ...string) *managerProcess {
	b.Helper()
	tmp := b.TempDir()
	t0 := time.Now()
	// Built as the Dockerfile builds the image's binary: the figure is the
	// one a user's container shows.
	build := procs.Builder{Dir: tmp}
	bin, err := build.Build(procs.ManagerImage)
	must(b, err)
	b.Logf("built cmd/manager in %s", time.Since(t0).Round(time.Millisecond))

	kubeconfig := filepath.Join(tmp, "kubeconfig")
	must(b, procs.WriteKubeconfig(kubeconfig, env().Config))
	port, err := procs.FreePort()
	must(b, err)
	pprofPort, err := procs.FreePort()
	must(b, err)

	name := strings.ReplaceAll(b.Name(), "/", "_")
	p, err := procs.StartManager(procs.ManagerSpec{
		Bin: bin, Kubeconfig: kubeconfig,
		Args: append([]string{
			"--enable-webhooks=false",
			"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(port),
			"--metrics-secure=false",
			"--health-probe-bind-address=0",
			"--pprof-bind-address", "127.0.0.1:" + strconv.Itoa(pprofPort),
			"--leader-elect=false",
			// The benchmarks' model and tool servers are on loopback, which
			// the egress policy denies by default.
			"--egress-allow-cidrs=127.0.0.1/32",
		}, extra...),
		Env: childEnv(), Log: filepath.Join(profilesDir(b), name+".manager.log"),
		// The kernel kills the child if the benchmark process dies first (a
		// -timeout panic runs no cleanup): killed, as at cleanup below.
		ParentDeath: syscall.SIGKILL,
	})
	must(b, err)
	// Killed, not stopped: a SIGTERM would hand every run back (a status
	// write each) on the apiserver the next benchmark measures.
	b.Cleanup(p.Kill)
	b.Logf("manager pid %d, metrics %s, log %s", p.Pid(), fmt.Sprintf("http://127.0.0.1:%d", port), p.Log)
	return &managerProcess{Process: p, metrics: fmt.Sprintf("http://127.0.0.1:%d", port), pprof: fmt.Sprintf("http://127.0.0.1:%d", pprofPort),
		http: &http.Client{Timeout: 30 * time.Second}, name: name}
}

// childEnv is this process's environment without what would change the
// manager's defaults: another cluster, a decision signing key, traces.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "KUBECONFIG" || k == "POD_NAMESPACE" || strings.HasPrefix(k, "OTEL_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// profilesDir is the -fast.profiles folder (as profile uses it).
func profilesDir(b *testing.B) string {
	dir := *fastProfiles
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "exagent-bench")
	}
	must(b, os.MkdirAll(dir, 0o755))
	return dir
}

// scrape reads the manager's metrics endpoint.
func (p *managerProcess) scrape() (map[string]*dto.MetricFamily, error) {
	resp, err := p.http.Get(p.metrics + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", p.metrics, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scraping %s: %s: %s", p.metrics, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", p.metrics, err)
	}
	return mf, nil
}

// waitRuns polls the manager process's exagent_runs gauge (its cache, not
// the apiserver) every interval until n runs of ns are in phase; a run of
// ns that ended otherwise than Succeeded fails the benchmark at once.
func (p *managerProcess) waitRuns(b *testing.B, ns string, phase exagentv1.RunPhase, n int, interval, timeout time.Duration) {
	b.Helper()
	in := 0.0
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		mf, err := p.scrape()
		if err != nil {
			return false, nil // a slow scrape under load: the next poll
		}
		in = 0
		for _, m := range mf["exagent_runs"].GetMetric() {
			if label(m, "namespace") != ns {
				continue
			}
			at := exagentv1.RunPhase(label(m, "phase"))
			if at.IsTerminal() && at != exagentv1.PhaseSucceeded && m.GetGauge().GetValue() > 0 {
				return false, fmt.Errorf("%.0f runs ended %s (manager log: %s)", m.GetGauge().GetValue(), at, p.Log)
			}
			if at == phase {
				in = m.GetGauge().GetValue()
			}
		}
		return in >= float64(n), nil
	})
	if err != nil {
		b.Fatalf("waiting for %d runs of %s to be %s (%.0f are): %v", n, ns, phase, in, err)
	}
}

// statusWritesOf is exagent_status_writes_total (all results) in mf.
func statusWritesOf(mf map[string]*dto.MetricFamily) float64 {
	w := 0.0
	for _, m := range mf["exagent_status_writes_total"].GetMetric() {
		w += m.GetCounter().GetValue()
	}
	return w
}

// waitQuiet waits until the endpoint answers and exagent_status_writes_total
// (all results) has not moved for quiet, and returns the last scrape.
func (p *managerProcess) waitQuiet(b *testing.B, quiet, timeout time.Duration) map[string]*dto.MetricFamily {
	b.Helper()
	var last map[string]*dto.MetricFamily
	prev, since := -1.0, time.Time{}
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(context.Context) (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		mf, err := p.scrape()
		if err != nil {
			return false, nil // not serving yet, or the cache not synced (HTTP 500)
		}
		last = mf
		w := statusWritesOf(mf)
		if w != prev {
			prev, since = w, time.Now()
			return false, nil
		}
		// …and its Events are written (the queue holds them until then).
		return time.Since(since) >= quiet && gauge(mf, "exagent_events_queued") == 0, nil
	})
	if err != nil {
		b.Fatalf("waiting for the manager to be quiet (status writes unchanged for %s): %v", quiet, err)
	}
	return last
}

// memory is the manager's resident set (procs.Memory: RSS, split into
// anonymous memory and file pages, and its peak).
func (p *managerProcess) memory(b *testing.B) procs.Memory {
	b.Helper()
	m, err := p.Memory()
	must(b, err)
	return m
}

// heapProfile saves the manager's heap profile (its --pprof-bind-address).
func (p *managerProcess) heapProfile(b *testing.B) {
	resp, err := p.http.Get(p.pprof + "/debug/pprof/heap")
	if err != nil {
		b.Logf("no heap profile of the manager: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Logf("no heap profile of the manager: its --pprof-bind-address answers %s to /debug/pprof/heap", resp.Status)
		return
	}
	path := filepath.Join(profilesDir(b), p.name+".manager.heap.pprof")
	f, err := os.Create(path)
	must(b, err)
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	must(b, errors.Join(err, f.Sync()))
	b.Logf("manager heap profile: %s", path)
}

// label is the value of the metric's label name ("" when absent).
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// gauge is the value of an unlabelled gauge (0 when absent).
func gauge(mf map[string]*dto.MetricFamily, name string) float64 {
	for _, m := range mf[name].GetMetric() {
		return m.GetGauge().GetValue()
	}
	return 0
}
