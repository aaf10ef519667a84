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

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exagent-io/exagent/internal/testenv"
)

// users of the dev cluster: alice approves (exagent-approver), bob may
// create decisions but approve only another agent's runs, carol resolves
// (exagent-resolver).
var users = []string{"alice", "bob", "carol:resolvers"}

// s is the suite's shared environment, set up by TestMain.
var s *suite

type suite struct {
	root        string // repository root
	work        string // temporary folder of the suite
	bin         string // built binaries: manager, kubectl-approve, devcluster
	k8sBin      string // kube-apiserver, etcd, kubectl from the hack script
	dir         string // devcluster --dir
	webhookPort int
	// metricsPort is the manager's metrics endpoint (HTTPS, authenticated
	// and authorized as in a pod) on 127.0.0.1.
	metricsPort int
	devcluster  *process
	manager     *process
	managers    int // how many manager processes were started, for log names
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	s, err = setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		if s != nil {
			if err := s.teardown(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e teardown:", err)
			}
		}
		return 1
	}
	code := m.Run()
	if err := s.teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e teardown:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func setup() (*suite, error) {
	k8sBin, err := testenv.BinaryAssets()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "exagent-e2e-")
	if err != nil {
		return nil, err
	}
	st := &suite{root: testenv.RepoRoot(), work: work, bin: filepath.Join(work, "bin"), k8sBin: k8sBin, dir: filepath.Join(work, "cluster")}
	if err := st.build(); err != nil {
		return st, err
	}
	if st.webhookPort, err = freePort(); err != nil {
		return st, err
	}
	if st.metricsPort, err = freePort(); err != nil {
		return st, err
	}
	if err := st.startDevcluster(); err != nil {
		return st, err
	}
	if err := st.startManager(); err != nil {
		return st, err
	}
	return st, nil
}

// build compiles the three binaries the way a release would: static, trimmed.
func (st *suite) build() error {
	for pkg, out := range map[string]string{
		"./cmd/manager":         "manager",
		"./cmd/kubectl-approve": "kubectl-approve",
		"./hack/devcluster":     "devcluster",
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(st.bin, out), pkg)
		cmd.Dir = st.root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
		}
	}
	return nil
}

func (st *suite) startDevcluster() error {
	if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return err
	}
	args := []string{"--dir", st.dir, "--root", st.root, "--webhook-port", strconv.Itoa(st.webhookPort)}
	for _, u := range users {
		args = append(args, "--user", u)
	}
	stdout := filepath.Join(st.work, "devcluster.out")
	p, err := startProcess("devcluster", stdout, st.env(""), filepath.Join(st.bin, "devcluster"), args...)
	if err != nil {
		return err
	}
	st.devcluster = p
	// The ready line is the contract (docs/architecture.md §9): wait for it, nothing else.
	want := "ready: KUBECONFIG=" + filepath.Join(st.dir, "kubeconfig")
	err = pollUntil(3*time.Minute, func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("devcluster exited: %v\n%s", p.err, p.tail())
		}
		b, _ := os.ReadFile(stdout)
		return bytes.Contains(b, []byte(want+"\n")), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %q: %w", want, err)
	}
	return nil
}

// startManager starts bin/manager against the admin kubeconfig, as docs/architecture.md
// §9 runs it, and waits until its webhook server accepts connections.
func (st *suite) startManager() error {
	st.managers++
	logPath := filepath.Join(st.work, fmt.Sprintf("manager-%d.log", st.managers))
	p, err := startProcess("manager", logPath, st.env(""), filepath.Join(st.bin, "manager"),
		"--kubeconfig", filepath.Join(st.dir, "kubeconfig"),
		"--webhook-cert-dir", filepath.Join(st.dir, "webhook"),
		"--webhook-port", strconv.Itoa(st.webhookPort),
		"--metrics-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(st.metricsPort)),
		"--health-probe-bind-address", "0",
		// As in a pod (POD_NAMESPACE): admitted decisions are sealed, and
		// the controller rejects a decision that skipped the webhook.
		"--decision-seal-secret", "exagent-system/exagent-decision-seal",
		// The tests' tool and model servers are on 127.0.0.1, which the
		// egress policy denies by default.
		"--egress-allow-cidrs", "127.0.0.1/32",
	)
	if err != nil {
		return err
	}
	st.manager = p
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(st.webhookPort))
	return pollUntil(time.Minute, func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("the manager exited: %v\n%s", p.err, p.tail())
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		_ = c.Close()
		return true, nil
	})
}

func (st *suite) teardown() error {
	var errs []error
	if st.manager != nil {
		if err := st.manager.stop(syscall.SIGTERM, 20*time.Second); err != nil && !isSignalExit(err) {
			errs = append(errs, fmt.Errorf("manager: %w", err))
		}
	}
	if st.devcluster != nil {
		// A clean stop is part of devcluster's contract: exit status 0.
		if err := st.devcluster.stop(syscall.SIGTERM, 30*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("devcluster: %w\n%s", err, st.devcluster.tail()))
		}
	}
	if len(errs) == 0 && os.Getenv("E2E_KEEP") == "" {
		_ = os.RemoveAll(st.work)
	} else {
		fmt.Fprintln(os.Stderr, "e2e: logs kept in", st.work)
	}
	return errors.Join(errs...)
}

// env is the environment of a child process: the built plugin and the hack
// script's kubectl first on PATH, a private HOME (kubectl's caches), and the
// kubeconfig of user ("" is the admin).
func (st *suite) env(user string) []string {
	kubeconfig := filepath.Join(st.dir, "kubeconfig")
	if user != "" {
		kubeconfig = filepath.Join(st.dir, user+".kubeconfig")
	}
	return st.envWith(kubeconfig)
}

// envWith is env with any kubeconfig (a control plane of a test's own).
func (st *suite) envWith(kubeconfig string) []string {
	return []string{
		"PATH=" + st.bin + string(os.PathListSeparator) + st.k8sBin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(st.work, "home"),
		"KUBECONFIG=" + kubeconfig,
		"GOCACHE=" + goEnv("GOCACHE"),
		"GOMODCACHE=" + goEnv("GOMODCACHE"),
		"GOFLAGS=" + os.Getenv("GOFLAGS"),
		"GOPROXY=" + goEnv("GOPROXY"),
		"EXAGENT_CACHE=" + os.Getenv("EXAGENT_CACHE"),
		"KUBEBUILDER_ASSETS=" + st.k8sBin,
	}
}

func goEnv(key string) string {
	b, err := exec.Command("go", "env", key).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pollUntil calls cond on a ticker until it is true, returns an error, or
// the deadline passes.
func pollUntil(timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s", timeout)
		case <-tick.C:
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func isSignalExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}

// scanLines splits s into trimmed non-empty lines.
func scanLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimRight(sc.Text(), " \t"); l != "" {
			out = append(out, l)
		}
	}
	return out
}
