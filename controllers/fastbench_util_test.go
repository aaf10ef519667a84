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
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// Sizes and outputs of the BenchmarkFast* benchmarks (make bench). Each
// measures the raw CAS round trip and the concurrent CAS ceiling of the
// same apiserver first, on a quiet apiserver, and reports its figures as
// ratios to them.
var (
	fastApprovals = flag.Int("fast.approvals", 40, "BenchmarkFastApproveToIntent: approvals measured one at a time")
	fastBurst     = flag.Int("fast.burst", 60, "BenchmarkFastApprovalBurst: approvals created at once")
	fastShort     = flag.Int("fast.short-runs", 200, "BenchmarkFastShortRuns: five-call runs started at once")
	fastSlow      = flag.Int("fast.slow-runs", 1000, "BenchmarkFastSlowModels: runs started at once")
	fastSlowDelay = flag.Duration("fast.slow-delay", time.Second, "BenchmarkFastSlowModels: how long the model takes to answer")
	fastWaiting   = flag.Int("fast.waiting", 10000, "BenchmarkFastWaitingRuns: runs left waiting for approval")
	fastProfiles  = flag.String("fast.profiles", "", "folder the benchmarks write CPU and heap profiles to (default: a folder under the temp dir)")
	fastInFlight  = flag.Int("fast.inflight", 0, "executor MaxInFlight of the benchmark managers (0: the default)")
	fastPerEP     = flag.Int("fast.per-endpoint", 0, "executor PerEndpoint of the benchmark managers (0: the default)")
	fastWorkers   = flag.Int("fast.workers", 0, "MaxConcurrentReconciles of the benchmark managers (0: the default)")
	fastCPUShort  = flag.Int("fast.cpu-short", 200, "BenchmarkFastApiserverCPU: two-call runs of load (a)")
	fastCPUProbe  = flag.Int("fast.cpu-probe", 4800, "BenchmarkFastApiserverCPU: plain 2 KiB status writes of the probe (each time it is measured)")
	fastCPUDump   = flag.Bool("fast.cpu-dump", false, "BenchmarkFastApiserverCPU: log the status of one finished run of each load")
)

// casUnit is the apiserver's raw speed in this run: the p50 of one
// sequential CAS status Update (≈2 KiB, carrying the resourceVersion) and
// the writes/s many writers reach together, each on its own object.
type casUnit struct {
	rt      time.Duration
	ceiling float64
	bytes   int
}

// casWriters is how many writers measure the concurrent ceiling: more
// than the managers' workers ever write at once.
const casWriters = 32

func measureCAS(b *testing.B, ns string) casUnit {
	b.Helper()
	ctx := context.Background()
	c := benchClient(b)
	spec := exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "none"}, Input: "x"}
	status := exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Attempts: 1}
	pad := strings.Repeat("x", 1500)
	write := func(s *exagentv1.AgentRunStatus, i int) { s.Message = pad + strconv.Itoa(i) }
	obj := createWithStatus(b, c, ns, "cas-rt", spec, status)
	write(&obj.Status, 0)
	must(b, c.Status().Update(ctx, obj))
	raw, _ := json.Marshal(obj)
	u := casUnit{rt: writeP50(b, c, obj, 300, write), bytes: len(raw)}
	_ = c.Delete(ctx, obj)
	u.ceiling = writeCeiling(b, c, ns, "cas-ceiling", spec, status, 60, write)
	return u
}

// benchClient has no client-side rate limiter: the apiserver's pace is
// the point.
func benchClient(b *testing.B) client.Client {
	cfg := rest.CopyConfig(env().Config)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: env().Scheme})
	must(b, err)
	return c
}

// createWithStatus creates a run named name with spec and returns it with
// status set, ready for its first status write.
func createWithStatus(b *testing.B, c client.Client, ns, name string, spec exagentv1.AgentRunSpec, status exagentv1.AgentRunStatus) *exagentv1.AgentRun {
	o := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	must(b, c.Create(context.Background(), o))
	o.Status = *status.DeepCopy()
	return o
}

// writeP50 is the p50 of n sequential CAS status writes of obj, change
// making each one differ from the last.
func writeP50(b *testing.B, c client.Client, obj *exagentv1.AgentRun, n int, change func(*exagentv1.AgentRunStatus, int)) time.Duration {
	lat := make([]time.Duration, 0, n)
	for i := range n {
		change(&obj.Status, i+1)
		t0 := time.Now()
		must(b, c.Status().Update(context.Background(), obj))
		lat = append(lat, time.Since(t0))
	}
	p50, _ := percentiles(lat)
	return p50
}

// writeCeiling is the concurrent CAS ceiling of runs with spec and
// status: casWriters writers, each writing its own copy each times (change
// making each write differ), in writes/s. The copies are deleted after.
func writeCeiling(b *testing.B, c client.Client, ns, prefix string, spec exagentv1.AgentRunSpec, status exagentv1.AgentRunStatus,
	each int, change func(*exagentv1.AgentRunStatus, int)) float64 {
	objs := make([]*exagentv1.AgentRun, casWriters)
	for i := range objs {
		objs[i] = createWithStatus(b, c, ns, fmt.Sprintf("%s-%d", prefix, i), spec, status)
	}
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range objs {
		wg.Go(func() {
			for j := range each {
				change(&objs[i].Status, j)
				must(b, c.Status().Update(context.Background(), objs[i]))
			}
		})
	}
	wg.Wait()
	ceiling := casWriters * float64(each) / time.Since(t0).Seconds()
	for _, o := range objs {
		_ = c.Delete(context.Background(), o)
	}
	return ceiling
}

// runCeiling is the concurrent CAS ceiling for objects carrying the
// status of run name (a finished run: the size and shape the manager's
// writes had).
func runCeiling(b *testing.B, h *harness, name string) float64 {
	b.Helper()
	c := benchClient(b)
	src := &exagentv1.AgentRun{}
	must(b, c.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, src))
	return writeCeiling(b, c, h.ns, "run-ceiling", src.Spec, src.Status, 30,
		func(s *exagentv1.AgentRunStatus, j int) { s.Message = fmt.Sprintf("write %d", j) })
}

func (u casUnit) report(b *testing.B) {
	b.ReportMetric(float64(u.rt.Microseconds())/1000, "cas-rt-ms")
	b.ReportMetric(u.ceiling, "cas-ceiling-w/s")
	b.ReportMetric(float64(u.bytes), "cas-object-B")
}

// ratio is d in units of the round trip.
func (u casUnit) ratio(d time.Duration) float64 { return d.Seconds() / u.rt.Seconds() }

// benchNamespace creates a fresh namespace for one benchmark.
func benchNamespace(b *testing.B, name string) *harness {
	h := &harness{t: b, ns: fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1000000), c: env().Client}
	must(b, h.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	return h
}

// benchOptions are the manager's default settings (cmd/manager's flags
// default to controllers.Setup's), overridden by the -fast.* flags.
func benchOptions() controllers.Options {
	return controllers.Options{MaxConcurrentReconciles: *fastWorkers, MaxInFlight: *fastInFlight, PerEndpoint: *fastPerEP}
}

// startBenchManager starts a manager configured as cmd/manager does (no
// client-side rate limiter: ctrl.GetConfig's default), whose client, when
// funcs is given, reports each call to it (the stage timeline).
func (h *harness) startBenchManager(opts controllers.Options, funcs *interceptor.Funcs) *manager {
	h.t.Helper()
	cfg := rest.CopyConfig(env().Config)
	cfg.QPS = -1
	benchRequests.reset()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} })
	o := h.managerOptions()
	o.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
		if funcs == nil {
			return client.New(cfg, o)
		}
		c, err := client.NewWithWatch(cfg, o)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, *funcs), nil
	}
	mgr, err := ctrl.NewManager(cfg, o)
	if err != nil {
		h.t.Fatalf("new manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return h.setUpAndStart(ctx, cancel, mgr, opts)
}

// timeline records, per run, the first instant of each stage of the
// approve → intent path, as the manager's own client calls show them.
type timeline struct {
	mu sync.Mutex
	at map[string]map[string]time.Time
	// current is the run whose approval is being measured: the
	// SubjectAccessReview names no run.
	current string
}

func newTimeline() *timeline { return &timeline{at: map[string]map[string]time.Time{}} }

func (tl *timeline) mark(run, stage string) {
	now := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	m := tl.at[run]
	if m == nil {
		m = map[string]time.Time{}
		tl.at[run] = m
	}
	if _, ok := m[stage]; !ok {
		m[stage] = now
	}
}

// lastGet records when the run controller last read the run: the
// reconcile that commits the intent read it last before that commit.
func (tl *timeline) lastGet(run string) {
	tl.mark(run, "get")
	tl.mu.Lock()
	tl.at[run]["get"] = time.Now()
	tl.mu.Unlock()
}

// runSeen marks when the reconcile that commits the intent began: its
// read of the run, or the decision's commit when that read came first (the
// reconcile woken by the decision's creation found the decided run in the
// store's own copy: no second hop).
func (tl *timeline) runSeen(run string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	m := tl.at[run]
	seen := m["get"]
	if d, ok := m[stDecisionDone]; ok && d.After(seen) {
		seen = d
	}
	if _, ok := m[stRunSeen]; !ok && !seen.IsZero() {
		m[stRunSeen] = seen
	}
}

func (tl *timeline) has(run, stage string) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	_, ok := tl.at[run][stage]
	return ok
}

func (tl *timeline) get(run, stage string) (time.Time, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	t, ok := tl.at[run][stage]
	return t, ok
}

// span is the time from stage from to stage to of run, when both happened.
func (tl *timeline) span(run, from, to string) (time.Duration, bool) {
	t0, ok0 := tl.get(run, from)
	t1, ok1 := tl.get(run, to)
	return t1.Sub(t0), ok0 && ok1
}

// latest is the last instant any of runs reached stage.
func (tl *timeline) latest(runs []exagentv1.AgentRun, stage string) time.Time {
	var last time.Time
	for i := range runs {
		if t, ok := tl.get(runs[i].Name, stage); ok && t.After(last) {
			last = t
		}
	}
	return last
}

func (tl *timeline) setCurrent(run string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.current = run
}

func (tl *timeline) cur() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.current
}

// Stages of the approve → intent path, in order.
const (
	stCreated        = "created"         // the bench sends the decision's Create
	stPersisted      = "persisted"       // … and the apiserver answered it: the decision exists
	stDecisionSeen   = "decision-seen"   // the decision controller reads the decision (watch + queue)
	stSARStart       = "sar-start"       // its SubjectAccessReview is sent
	stSAREnd         = "sar-end"         // … and answered
	stDecisionCommit = "decision-commit" // the run's status Update applying the decision is sent
	stDecisionDone   = "decision-done"   // … and answered
	stRunSeen        = "run-seen"        // the run controller reads the run after that
	stIntentCommit   = "intent-commit"   // the claim + intent Update is sent
	stIntentDone     = "intent-done"     // … and answered
	stToolRequest    = "tool-request"    // the tool server receives the request
)

// funcs are the manager client's interceptors feeding tl.
func (tl *timeline) funcs() *interceptor.Funcs {
	return &interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*exagentv1.ApprovalDecision); ok {
				tl.mark(strings.TrimSuffix(key.Name, "-ok"), stDecisionSeen)
			}
			if _, ok := obj.(*exagentv1.AgentRun); ok {
				tl.lastGet(key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			_, sar := obj.(*authorizationv1.SubjectAccessReview)
			run := tl.cur()
			if sar && run != "" {
				tl.mark(run, stSARStart)
			}
			err := c.Create(ctx, obj, opts...)
			if sar && run != "" {
				tl.mark(run, stSAREnd)
			}
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			run, ok := obj.(*exagentv1.AgentRun)
			var marks [][2]string // {sent, answered} pairs this write stands for
			merged := false
			switch {
			case !ok:
			case run.Status.Phase == exagentv1.PhaseApproved && tl.has(run.Name, stCreated) && !tl.has(run.Name, stDecisionCommit):
				marks = append(marks, [2]string{stDecisionCommit, stDecisionDone})
			case run.Status.Phase == exagentv1.PhaseRunning && tl.has(run.Name, stCreated) && !tl.has(run.Name, stDecisionCommit):
				// The decision applied, the run claimed and the intent committed in one write.
				marks = append(marks, [2]string{stDecisionCommit, stDecisionDone})
				merged = true
			case run.Status.Phase == exagentv1.PhaseRunning && tl.has(run.Name, stDecisionCommit) && !tl.has(run.Name, stIntentDone):
				tl.runSeen(run.Name)
				marks = append(marks, [2]string{stIntentCommit, stIntentDone})
			}
			for _, m := range marks {
				tl.mark(run.Name, m[0])
			}
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			if err == nil {
				for _, m := range marks {
					tl.mark(run.Name, m[1])
				}
				if merged { // stages 6–8 took no time of their own
					for _, st := range []string{stRunSeen, stIntentCommit, stIntentDone} {
						tl.mark(run.Name, st)
					}
				}
			}
			return err
		},
	}
}

// requestCounter counts the manager's requests to the apiserver by verb
// and resource (events included: their broadcaster uses the same config).
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

var benchRequests = &requestCounter{n: map[string]int{}}

func (rc *requestCounter) reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.n = map[string]int{}
}

// writes is how many of the counted requests wrote (POST, PUT, PATCH,
// DELETE; not the reviews, which are POSTs that store nothing).
func (rc *requestCounter) writes() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	w := 0
	for k, n := range rc.n {
		verb, res, _ := strings.Cut(k, " ")
		if strings.HasSuffix(res, "reviews") {
			continue
		}
		switch verb {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			w += n
		}
	}
	return w
}

// String lists the counts, most first.
func (rc *requestCounter) String() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	keys := make([]string, 0, len(rc.n))
	for k := range rc.n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return rc.n[keys[i]] > rc.n[keys[j]] })
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, rc.n[k]))
	}
	return strings.Join(out, ", ")
}

type countingTransport struct{ rt http.RoundTripper }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	what := r.Method
	if r.URL.Query().Get("watch") == "true" {
		what = "WATCH"
	}
	res := ""
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			res = strings.Join(parts[i+2:], "/")
			break
		}
	}
	if res == "" && len(parts) > 0 {
		res = parts[len(parts)-1]
	}
	// agentruns/NAME/status → agentruns/status
	if seg := strings.Split(res, "/"); len(seg) >= 2 {
		res = seg[0]
		if len(seg) == 3 {
			res += "/" + seg[2]
		}
	}
	benchRequests.mu.Lock()
	benchRequests.n[what+" "+res]++
	benchRequests.mu.Unlock()
	return t.rt.RoundTrip(r)
}

// connCounter counts the TCP connections a test server accepted.
type connCounter struct{ n atomic.Int64 }

func (cc *connCounter) hook(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		cc.n.Add(1)
	}
}

// profile writes a CPU profile of fn and a heap profile after it into the
// profiles folder, named after the benchmark.
func profile(b *testing.B, fn func()) {
	dir := *fastProfiles
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "exagent-bench")
	}
	must(b, os.MkdirAll(dir, 0o755))
	name := strings.ReplaceAll(b.Name(), "/", "_")
	cpu, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
	must(b, err)
	defer cpu.Close()
	must(b, pprof.StartCPUProfile(cpu))
	// Where the goroutines wait, a few seconds in (what a CPU profile does not show).
	snap := time.AfterFunc(3*time.Second, func() {
		if f, err := os.Create(filepath.Join(dir, name+".goroutines.txt")); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
	})
	fn()
	snap.Stop()
	pprof.StopCPUProfile()
	heap, err := os.Create(filepath.Join(dir, name+".heap.pprof"))
	must(b, err)
	defer heap.Close()
	runtime.GC()
	must(b, pprof.WriteHeapProfile(heap))
	b.Logf("profiles: %s/%s.{cpu,heap}.pprof", dir, name)
}

// sampler records the peak heap in use and goroutines while it runs.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	heapPeak uint64
	gorPeak  int
}

func startSampler() *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s.heapPeak = max(s.heapPeak, ms.HeapInuse)
			s.gorPeak = max(s.gorPeak, runtime.NumGoroutine())
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) end() (heapPeak uint64, goroutines int) {
	close(s.stop)
	<-s.done
	return s.heapPeak, s.gorPeak
}

// heapInuse is the heap in use after a full collection.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// rss is this process's resident set (Linux), 0 when unknown, after the
// runtime returned what it does not use to the OS.
func rss() uint64 {
	debug.FreeOSMemory()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

const mib = 1 << 20
