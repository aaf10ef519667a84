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
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// alice is the person of the test: she lists what waits (kubectl approve
// list -A, the inbox page) and approves, with her own client certificate
// and a ClusterRoleBinding to exagent-approver (config/rbac).
const alice = "alice"

// signingSecret is the decision-signing Secret every manager shares, as in
// a pod (the chart's name).
const signingSecret = "exagent-system/exagent-decision-seal"

// managerNamespace is devcluster's namespace for the manager's own
// objects: the signing Secret and the leader-election Leases.
const managerNamespace = "exagent-system"

// plane is one hack/devcluster process (kube-apiserver, etcd and
// kube-controller-manager on loopback) and the webhook front on the port
// its webhook configuration names.
type plane struct {
	dir    string
	bin    *procs.Builder
	k8sBin string

	proc  *procs.Process
	front *front
	admin *rest.Config
	c     client.Client
	alice client.Client

	mu       sync.Mutex
	managers int
}

// startPlane builds nothing (the caller did) and starts devcluster in dir
// with the webhook front listening first on a free port, so that the
// configuration devcluster registers points at it.
func startPlane(dir string, bin *procs.Builder, k8sBin string) (*plane, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := listenFront()
	if err != nil {
		return nil, err
	}
	p := &plane{dir: dir, bin: bin, k8sBin: k8sBin, front: f}
	proc, err := procs.StartDevcluster(procs.DevclusterSpec{
		Bin: bin.Path("devcluster"), Dir: dir, Root: testenv.RepoRoot(), WebhookPort: f.port(), Users: []string{alice},
		Env: append(os.Environ(), "KUBEBUILDER_ASSETS="+k8sBin),
		Log: filepath.Join(dir, "devcluster.log"),
	})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("starting devcluster: %w", err)
	}
	p.proc = proc
	if p.admin, err = loadKubeconfig(filepath.Join(dir, "kubeconfig")); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	if p.c, err = client.New(p.admin, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return nil, errors.Join(fmt.Errorf("admin client: %w", err), p.stop())
	}
	cfg, err := loadKubeconfig(p.kubeconfig(alice))
	if err != nil {
		return nil, errors.Join(err, p.stop())
	}
	if p.alice, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return nil, errors.Join(fmt.Errorf("alice's client: %w", err), p.stop())
	}
	return p, nil
}

// stop stops kube-apiserver and etcd (SIGTERM: devcluster's clean stop)
// and the webhook front.
func (p *plane) stop() error {
	p.front.close()
	if p.proc == nil {
		return nil
	}
	err := p.proc.Stop(syscall.SIGTERM, 60*time.Second)
	p.proc = nil
	return err
}

// kubeconfig is user's kubeconfig ("" is the admin's).
func (p *plane) kubeconfig(user string) string {
	if user == "" {
		return filepath.Join(p.dir, "kubeconfig")
	}
	return filepath.Join(p.dir, user+".kubeconfig")
}

// loadKubeconfig is the test's own client of path, its client-side rate
// limit raised: the burst is the apiserver's to bound, not client-go's.
func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.Timeout = 2 * time.Minute
	return cfg, nil
}

// front is the webhook's front on 127.0.0.1: a TCP pass-through that
// hands each connection the apiserver opens to one live manager's webhook
// server, round robin, skipping one that refuses — what a Service in front
// of the manager pods does. TLS stays end to end (every manager serves the
// pair devcluster registered), so the apiserver still verifies the
// manager's certificate and the manager the apiserver's client
// certificate (--webhook-client-ca). Every manager serves the webhooks,
// as in a cluster: killing one never closes admission.
type front struct {
	ln net.Listener

	mu       sync.Mutex
	backends []string
	next     int
	conns    map[net.Conn]string // accepted connection → its backend
}

func listenFront() (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the webhook front: %w", err)
	}
	f := &front{ln: ln, conns: map[net.Conn]string{}}
	go f.serve()
	return f, nil
}

func (f *front) port() int { return f.ln.Addr().(*net.TCPAddr).Port }

func (f *front) close() { _ = f.ln.Close() }

// add makes addr one of the backends.
func (f *front) add(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backends = append(f.backends, addr)
}

// remove takes addr out and closes the connections it carried, as an
// endpoint removed from a Service: the apiserver reconnects to another.
func (f *front) remove(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, b := range f.backends {
		if b == addr {
			f.backends = append(f.backends[:i], f.backends[i+1:]...)
			break
		}
	}
	for c, b := range f.conns {
		if b == addr {
			_ = c.Close()
		}
	}
}

func (f *front) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		go f.pipe(c)
	}
}

// pipe connects c to the first backend, from the next in turn, that
// accepts a connection.
func (f *front) pipe(c net.Conn) {
	defer c.Close()
	f.mu.Lock()
	order := make([]string, 0, len(f.backends))
	for i := range f.backends {
		order = append(order, f.backends[(f.next+i)%len(f.backends)])
	}
	f.next++
	f.mu.Unlock()
	for _, addr := range order {
		b, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		f.mu.Lock()
		f.conns[c] = addr
		f.mu.Unlock()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(b, c); _ = b.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
		<-done
		_ = b.Close()
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		return
	}
}

// manager is one cmd/manager process of the test.
type manager struct {
	*procs.Process
	// name is its role ("shard-1", "unsharded", "shard-1 replacement").
	name, shard, holder string
	webhook, metrics    string
	http                *http.Client
	// spec is how it was started (a restart starts it again so).
	spec managerSpec
}

// managerSpec is how one manager starts: shard "" is unsharded.
type managerSpec struct {
	name, shard string
	shards      []string
	// sharded says whether the binary has --shard (the harness runs
	// unsharded managers when it has not: see shardingSupported).
	sharded bool
}

// startManager starts bin/manager as its own identity (devcluster's
// manager.kubeconfig), serving the webhooks on a port of its own behind
// the front, its metrics on loopback over plain HTTP, and waits until its
// webhook accepts connections and its metrics answer (which they do only
// once the cache it reads runs from has synced).
func (p *plane) startManager(s managerSpec) (*manager, error) {
	p.mu.Lock()
	p.managers++
	n := p.managers
	p.mu.Unlock()
	webhookPort, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	holder := fmt.Sprintf("%s-%d", strings.ReplaceAll(s.name, " ", "-"), n)
	m := &manager{name: s.name, shard: s.shard, holder: holder,
		webhook: net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)),
		metrics: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)),
		http:    &http.Client{Timeout: time.Minute}, spec: s}
	args := []string{
		"--webhook-cert-dir", filepath.Join(p.dir, "webhook"),
		"--webhook-port", strconv.Itoa(webhookPort),
		"--webhook-client-ca", filepath.Join(p.dir, "webhook", "client-ca.crt"),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(metricsPort), "--metrics-secure=false",
		"--health-probe-bind-address", "0",
		"--holder-identity", holder,
		"--decision-signing-secret", signingSecret,
		// The model and tool servers are on 127.0.0.1, which the egress
		// policy denies by default.
		"--egress-allow-cidrs", "127.0.0.1/32",
		// docs/sizing.md for thousands of runs against one model host: the
		// per-endpoint limit at least the runs that share it (model and
		// tool server are both 127.0.0.1), the total above it.
		"--max-concurrent-reconciles", strconv.Itoa(*flagReconciles),
		"--max-inflight-per-endpoint", "4096", "--max-inflight-io", "8192",
	}
	if s.sharded {
		args = append(args, "--shards", strings.Join(s.shards, ","))
		if s.shard != "" {
			// One Lease per shard: a replacement waits for the one it
			// replaces, and leader-only work is per shard.
			args = append(args, "--shard", s.shard, "--leader-elect",
				"--leader-election-id", "exagent-manager-"+s.shard+".exagent.io",
				"--leader-election-namespace", managerNamespace)
		}
	}
	proc, err := procs.StartManager(procs.ManagerSpec{
		Name: "manager " + s.name, Bin: p.bin.Path("manager"), Kubeconfig: filepath.Join(p.dir, "manager.kubeconfig"),
		Args: args, Env: managerEnv(), Log: filepath.Join(p.dir, fmt.Sprintf("manager-%02d-%s.log", n, holder)),
		// A -timeout panic runs no cleanup: the kernel kills the child.
		ParentDeath: syscall.SIGKILL,
		Ready:       procs.Listening(m.webhook), Timeout: 5 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	m.Process = proc
	p.front.add(m.webhook)
	if err := procs.Poll(10*time.Minute, func() (bool, error) {
		if err := m.Alive(); err != nil {
			return false, err
		}
		_, err := m.scrape()
		return err == nil, nil
	}); err != nil {
		p.front.remove(m.webhook)
		m.Kill()
		return nil, fmt.Errorf("waiting for the metrics of %s: %w", s.name, err)
	}
	return m, nil
}

// kill is SIGKILL, a crashed pod: the front forgets it at once.
func (p *plane) kill(m *manager) {
	m.Kill()
	p.front.remove(m.webhook)
}

// stopManager is SIGTERM, a rolling update's stop: the manager drains and
// hands back the runs it owns (--release-on-stop), so that the next one
// claims them at once.
func (p *plane) stopManager(m *manager) error {
	p.front.remove(m.webhook)
	err := m.Stop(syscall.SIGTERM, 2*time.Minute)
	if err != nil && !procs.IsSignalExit(err) {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 0 {
			return fmt.Errorf("stopping %s: %w\n%s", m.name, err, m.Tail())
		}
	}
	return nil
}

// managerEnv is this process's environment without what would point the
// manager elsewhere (another cluster, traces).
func managerEnv() []string {
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

// scrape reads the manager's metrics.
func (m *manager) scrape() (map[string]*dto.MetricFamily, error) {
	resp, err := m.http.Get(m.metrics + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", m.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scraping %s: %s: %s", m.name, resp.Status, body)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return mf, nil
}

// managerFigures is what one scrape of a manager says.
type managerFigures struct {
	// writes is exagent_status_writes_total (all results).
	writes float64
	// runs is exagent_runs summed: the runs in its cache, by phase too.
	runs    float64
	byPhase map[string]float64
}

func (m *manager) figures() (managerFigures, error) {
	mf, err := m.scrape()
	if err != nil {
		return managerFigures{}, err
	}
	out := managerFigures{byPhase: map[string]float64{}}
	for _, x := range mf["exagent_status_writes_total"].GetMetric() {
		out.writes += x.GetCounter().GetValue()
	}
	for _, x := range mf["exagent_runs"].GetMetric() {
		v := x.GetGauge().GetValue()
		out.runs += v
		out.byPhase[label(x, "phase")] += v
	}
	return out, nil
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

// shardingSupported reports whether the built manager has --shard
// (docs/architecture.md §22): the harness then runs real shards;
// otherwise as many unsharded managers, each of which serves everything.
func shardingSupported(bin string) (bool, error) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil && len(out) == 0 {
		return false, fmt.Errorf("%s --help: %w", bin, err)
	}
	return strings.Contains(string(out), "-shards"), nil
}

// poll calls cond every interval until it is true, returns an error, or
// timeout passes; what says what was waited for.
func poll(ctx context.Context, what string, interval, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: not within %s", what, timeout)
		case <-tick.C:
		}
	}
}
