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
	"net"
	"net/http"
	"os"
	"os/exec"
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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/testenv"
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
	ctx := context.Background()
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
	waited := 0.0
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 20*time.Minute, true, func(context.Context) (bool, error) {
		if err := p.alive(); err != nil {
			return false, err
		}
		mf, err := p.scrape()
		if err != nil {
			return false, nil // a slow scrape under load: the next poll
		}
		waited = 0
		for _, m := range mf["exagent_runs"].GetMetric() {
			if label(m, "namespace") != h.ns {
				continue
			}
			phase := exagentv1.RunPhase(label(m, "phase"))
			if phase.IsTerminal() && phase != exagentv1.PhaseSucceeded && m.GetGauge().GetValue() > 0 {
				return false, fmt.Errorf("%.0f runs ended %s (manager log: %s)", m.GetGauge().GetValue(), phase, p.logPath)
			}
			if phase == exagentv1.PhaseAwaitingApproval {
				waited = m.GetGauge().GetValue()
			}
		}
		return waited >= float64(n), nil
	})
	if err != nil {
		b.Fatalf("waiting for %d runs to wait for approval (%.0f do): %v", n, waited, err)
	}
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
	delta := mem.rss - min(mem.rss, mem0.rss)
	b.ReportMetric(float64(mem0.rss)/mib, "rss-idle-MiB")
	b.ReportMetric(float64(mem.rss)/mib, "rss-MiB")
	b.ReportMetric(float64(mem.peak)/mib, "rss-peak-MiB")
	b.ReportMetric(float64(delta)/mib, "rss-delta-MiB")
	b.ReportMetric(float64(delta)/float64(n)/1024, "rss-KiB/run")
	b.ReportMetric(float64(mem.anon)/mib, "rss-anon-MiB")
	b.ReportMetric(float64(mem.file)/mib, "rss-file-MiB")
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
		float64(mem0.rss)/mib, float64(mem0.anon)/mib, float64(mem0.file)/mib, heap0/mib, gauge(idle, "go_goroutines"))
	b.Logf("waiting runs (manager process %d): %d paused in %s; RSS %.1f MiB (anon %.1f, file %.1f; idle %.1f, +%.1f MiB = %.1f KiB/run), peak %.1f MiB; heap in use %.1f MiB (+%.1f), %.0f goroutines; %.0f runs of other namespaces in its cache",
		p.cmd.Process.Pid, n, elapsed.Round(time.Millisecond), float64(mem.rss)/mib, float64(mem.anon)/mib, float64(mem.file)/mib,
		float64(mem0.rss)/mib, float64(delta)/mib, float64(delta)/float64(n)/1024, float64(mem.peak)/mib,
		heap/mib, (heap-heap0)/mib, gor, elsewhere)
	b.ReportMetric(0, "ns/op")
}

// managerProcess is cmd/manager running as a child of the benchmark.
type managerProcess struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	metrics string // http://127.0.0.1:PORT
	http    *http.Client
	logPath string
	name    string // the benchmark's, for file names
}

// startManagerProcess builds cmd/manager (as the Dockerfile does), writes an admin kubeconfig for
// the envtest and starts the binary with its default settings but for
// what a loopback benchmark needs; the process is killed at cleanup (and
// by the kernel if the benchmark dies first).
func startManagerProcess(b *testing.B) *managerProcess {
	b.Helper()
	tmp := b.TempDir()
	bin := filepath.Join(tmp, "manager")
	t0 := time.Now()
	// Built as the Dockerfile builds the image's binary: the figure is the
	// one a user's container shows.
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/manager")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/manager: %v\n%s", err, out)
	}
	b.Logf("built cmd/manager in %s", time.Since(t0).Round(time.Millisecond))

	kubeconfig := filepath.Join(tmp, "kubeconfig")
	must(b, writeAdminKubeconfig(kubeconfig, env().Config))
	port := freePort(b)

	dir := profilesDir(b)
	name := strings.ReplaceAll(b.Name(), "/", "_")
	logPath := filepath.Join(dir, name+".manager.log")
	logFile, err := os.Create(logPath)
	must(b, err)

	cmd := exec.Command(bin,
		"--kubeconfig", kubeconfig,
		"--enable-webhooks=false",
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(port),
		"--metrics-secure=false",
		"--health-probe-bind-address=0",
		"--leader-elect=false",
	)
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The kernel kills the child if the benchmark process dies first (a
	// -timeout panic runs no cleanup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		b.Fatalf("starting the manager: %v", err)
	}
	p := &managerProcess{
		cmd: cmd, exited: make(chan struct{}), metrics: fmt.Sprintf("http://127.0.0.1:%d", port),
		http: &http.Client{Timeout: 30 * time.Second}, logPath: logPath, name: name,
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	b.Cleanup(func() {
		// Killed, not stopped: a SIGTERM would hand every run back (a
		// status write each) on the apiserver the next benchmark measures.
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		_ = logFile.Close()
	})
	b.Logf("manager pid %d, metrics %s, log %s", cmd.Process.Pid, p.metrics, logPath)
	return p
}

// childEnv is this process's environment without what would change the
// manager's defaults: another cluster, a decision seal, traces.
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

// writeAdminKubeconfig writes cfg (the envtest's admin: a client
// certificate, or a bearer token) as a kubeconfig with one context.
func writeAdminKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile, Token: cfg.BearerToken,
	}
	kc.Contexts["admin@envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "admin@envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the kubeconfig %s: %w", path, err)
	}
	return nil
}

// freePort is a loopback port free a moment ago.
func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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

// alive is nil while the manager runs.
func (p *managerProcess) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the manager exited (%v); its log: %s", p.waitErr, p.logPath)
	default:
		return nil
	}
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

// waitQuiet waits until the endpoint answers and exagent_status_writes_total
// (all results) has not moved for quiet, and returns the last scrape.
func (p *managerProcess) waitQuiet(b *testing.B, quiet, timeout time.Duration) map[string]*dto.MetricFamily {
	b.Helper()
	var last map[string]*dto.MetricFamily
	prev, since := -1.0, time.Time{}
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(context.Context) (bool, error) {
		if err := p.alive(); err != nil {
			return false, err
		}
		mf, err := p.scrape()
		if err != nil {
			return false, nil // not serving yet, or the cache not synced (HTTP 500)
		}
		last = mf
		w := 0.0
		for _, m := range mf["exagent_status_writes_total"].GetMetric() {
			w += m.GetCounter().GetValue()
		}
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

// procMemory is the manager's resident set from /proc/PID/status: now
// (VmRSS, split into anonymous memory — heap, stacks — and file pages —
// the binary's code and data, shared and reclaimable) and its peak (VmHWM).
type procMemory struct{ rss, peak, anon, file uint64 }

func (p *managerProcess) memory(b *testing.B) procMemory {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	must(b, err)
	var m procMemory
	fields := map[string]*uint64{"VmRSS": &m.rss, "VmHWM": &m.peak, "RssAnon": &m.anon, "RssFile": &m.file}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		dst := fields[k]
		if !ok || dst == nil {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		must(b, err)
		*dst = kb * 1024
	}
	if m.rss == 0 || m.peak == 0 {
		b.Fatalf("/proc/%d/status has no VmRSS or VmHWM", p.cmd.Process.Pid)
	}
	return m
}

// heapProfile saves the manager's heap profile when its metrics endpoint
// serves pprof (cmd/manager registers none today: then it says so).
func (p *managerProcess) heapProfile(b *testing.B) {
	resp, err := p.http.Get(p.metrics + "/debug/pprof/heap")
	if err != nil {
		b.Logf("no heap profile of the manager: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Logf("no heap profile of the manager: its metrics endpoint answers %s to /debug/pprof/heap (cmd/manager serves no pprof)", resp.Status)
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
