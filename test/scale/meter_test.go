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
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat
// (100 on every Linux this runs on).
const clockTicks = 100

// procStat is the command name of process pid and the fields of
// /proc/PID/stat after it (the name may hold spaces: fields[0] is the
// state, field 3).
func procStat(pid int) (comm string, fields []string, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", nil, err
	}
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return "", nil, fmt.Errorf("/proc/%d/stat: no command name in %q", pid, s)
	}
	return s[open+1 : end], strings.Fields(s[end+2:]), nil
}

// cpuSeconds is the CPU time (user + system) process pid has used so far.
func cpuSeconds(pid int) (float64, error) {
	_, fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	utime, err := strconv.ParseFloat(fields[11], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat utime: %w", pid, err)
	}
	stime, err := strconv.ParseFloat(fields[12], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat stime: %w", pid, err)
	}
	return (utime + stime) / clockTicks, nil
}

// controlPlane is what the test reads of kube-apiserver and etcd: their
// processes (children of devcluster), the apiserver's metrics, and etcd's
// data directory and metrics endpoint (from their command lines).
type controlPlane struct {
	apiserver, etcd, kcm int
	etcdDataDir          string
	etcdURL              string
	cs                   *kubernetes.Clientset
	http                 *http.Client
}

func findControlPlane(p *plane) (*controlPlane, error) {
	cs, err := kubernetes.NewForConfig(p.admin)
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	cp := &controlPlane{cs: cs, http: &http.Client{Timeout: 30 * time.Second}}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := p.proc.Pid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, fields, err := procStat(pid)
		if err != nil {
			continue // gone, or not a process
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != parent {
			continue
		}
		switch comm {
		case "kube-apiserver":
			cp.apiserver = pid
			if v := cmdlineFlag(pid, "etcd-servers"); v != "" {
				cp.etcdURL = strings.Split(v, ",")[0]
			}
		case "kube-controller":
			// kube-controller-manager, its name cut to 15 characters.
			cp.kcm = pid
		case "etcd":
			cp.etcd = pid
			cp.etcdDataDir = cmdlineFlag(pid, "data-dir")
		}
	}
	if cp.apiserver == 0 || cp.etcd == 0 {
		return nil, fmt.Errorf("no kube-apiserver (%d) or etcd (%d) child of devcluster (pid %d)", cp.apiserver, cp.etcd, parent)
	}
	return cp, nil
}

// cmdlineFlag is the value of --name=value (or --name value) on pid's
// command line.
func cmdlineFlag(pid int, name string) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// requests is the apiserver's apiserver_request_total by "VERB
// resource[/subresource]", all codes and scopes.
func (cp *controlPlane) requests(ctx context.Context) (map[string]float64, error) {
	raw, err := cp.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("the apiserver's metrics: %w", err)
	}
	mf, err := parseMetrics(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range mf["apiserver_request_total"].GetMetric() {
		key := label(m, "verb") + " " + label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			key += "/" + sub
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out, nil
}

// runStatusWrites is how many status writes of AgentRuns the apiserver
// has served (PUT, PATCH and APPLY of agentruns/status, every code: a
// conflict costs it a decode and a read too).
func runStatusWrites(r map[string]float64) float64 {
	return r["PUT agentruns/status"] + r["PATCH agentruns/status"] + r["APPLY agentruns/status"]
}

// machineBusy is the CPU seconds every process of the machine has used
// (/proc/stat: all but idle and iowait), to tell the test's own
// processes from whatever else the machine runs.
func machineBusy() (float64, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	busy := 0.0
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is counted in user already
			break
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += x
	}
	return busy / clockTicks, nil
}

// etcdSize is etcd's database: the size of its db file, and what its
// metrics say of the database (total and in use).
type etcdSize struct {
	file, total, inUse float64
}

func (cp *controlPlane) etcdSize(ctx context.Context) (etcdSize, error) {
	var s etcdSize
	if st, err := os.Stat(filepath.Join(cp.etcdDataDir, "member", "snap", "db")); err == nil {
		s.file = float64(st.Size())
	}
	if cp.etcdURL == "" {
		return s, fmt.Errorf("no --etcd-servers on the apiserver's command line")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cp.etcdURL, "/")+"/metrics", nil)
	if err != nil {
		return s, err
	}
	resp, err := cp.http.Do(req)
	if err != nil {
		return s, fmt.Errorf("etcd's metrics: %w", err)
	}
	defer resp.Body.Close()
	mf, err := parseMetrics(resp.Body)
	if err != nil {
		return s, err
	}
	for _, m := range mf["etcd_mvcc_db_total_size_in_bytes"].GetMetric() {
		s.total = m.GetGauge().GetValue()
	}
	for _, m := range mf["etcd_mvcc_db_total_size_in_use_in_bytes"].GetMetric() {
		s.inUse = m.GetGauge().GetValue()
	}
	return s, nil
}

// window is what one measured window saw: for each process its CPU
// seconds, for the apiserver its requests, for each manager its status
// writes and cache, the tool server's steps.
type window struct {
	name string
	wall time.Duration

	apiserverCPU, etcdCPU float64
	// machineCPU is every process's CPU, ownCPU the test's processes'
	// (control plane, managers, this process with its servers).
	machineCPU, ownCPU float64
	// statusWrites are the apiserver's status writes of AgentRuns.
	statusWrites float64
	// steps are the running runs' tool calls journaled (one per step).
	steps float64
	// modelRequests are the running runs' model requests.
	modelRequests float64
	// requests are the apiserver's requests of the window by kind.
	requests map[string]float64
	// notResumed are running runs that had not resumed after the swap
	// before this window (a manager that never picked them up).
	notResumed int
	managers   []managerWindow
}

// managerWindow is one manager's share of a window.
type managerWindow struct {
	name        string
	cpu, writes float64
	rss, anon   float64
	cachedRuns  float64
	idleRSS     float64
}

// sample is the counters at one instant.
type sample struct {
	at            time.Time
	apiCPU, etcd  float64
	machine, own  float64
	apiWrites     float64
	steps, models float64
	mgrCPU        []float64
	mgrWrites     []float64
	reqs          map[string]float64
}

func (cp *controlPlane) sample(ctx context.Context, ms []*manager, steps, models func() float64) (sample, error) {
	s := sample{at: time.Now(), steps: steps(), models: models()}
	var err error
	if s.apiCPU, err = cpuSeconds(cp.apiserver); err != nil {
		return s, err
	}
	if s.etcd, err = cpuSeconds(cp.etcd); err != nil {
		return s, err
	}
	if s.machine, err = machineBusy(); err != nil {
		return s, err
	}
	s.own = s.apiCPU + s.etcd
	for _, pid := range []int{cp.kcm, os.Getpid()} {
		if pid != 0 {
			c, _ := cpuSeconds(pid)
			s.own += c
		}
	}
	r, err := cp.requests(ctx)
	if err != nil {
		return s, err
	}
	s.apiWrites, s.reqs = runStatusWrites(r), r
	for _, m := range ms {
		c, err := cpuSeconds(m.Pid())
		if err != nil {
			return s, err
		}
		f, err := m.figures()
		if err != nil {
			return s, err
		}
		s.own += c
		s.mgrCPU = append(s.mgrCPU, c)
		s.mgrWrites = append(s.mgrWrites, f.writes)
	}
	return s, nil
}

// requestsPerWrite are the window's apiserver requests per AgentRun
// status write, the n most frequent kinds first ("LIST agentrunsegments
// 0.53, POST events 0.12").
func (w window) requestsPerWrite(n int) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range w.requests {
		if v > 0 && !strings.HasPrefix(k, "WATCH ") {
			all = append(all, kv{k, v})
		}
	}
	slices.SortFunc(all, func(a, b kv) int { return cmp.Or(cmp.Compare(b.v, a.v), strings.Compare(a.k, b.k)) })
	var parts []string
	for i, x := range all {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", x.k, x.v/max(w.statusWrites, 1)))
	}
	return strings.Join(parts, ", ")
}
