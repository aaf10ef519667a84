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
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// users of the dev cluster: alice approves (exagent-approver), bob may
// create decisions but approve only another agent's runs, carol resolves
// (exagent-resolver), dave only views where a test binds him; erin and
// grace (group security) and frank (group sre) vote where a quorum test
// binds their groups.
var users = []string{"alice", "bob", "carol:resolvers", "dave", "erin:security", "frank:sre", "grace:security"}

// s is the suite's shared environment, set up by TestMain.
var s *suite

type suite struct {
	root   string // repository root
	work   string // temporary folder of the suite
	bin    string // built binaries: manager, kubectl-approve, devcluster
	k8sBin string // kube-apiserver, etcd, kubectl from the hack script
	dir    string // devcluster --dir
	build  procs.Builder

	// The shared cluster — devcluster and a manager process — is started
	// by the first test that needs it (up), so that the tests that read
	// only the repository (packaging, kustomize renderings) or start a
	// control plane of their own run without it.
	upOnce      sync.Once
	upErr       error
	webhookPort int
	// metricsPort is the manager's metrics endpoint (HTTPS, authenticated
	// and authorized as in a pod) on 127.0.0.1.
	metricsPort int
	// triggerPort is the manager's trigger listener (HTTPS with the
	// webhook's serving certificate) on 127.0.0.1.
	triggerPort int
	devcluster  *procs.Process
	manager     *procs.Process
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

// setup builds the three binaries the way a release would (static,
// trimmed): TestManagerIsStatic reads the manager's, the namespaced tests
// run it against a control plane of their own, the rest in the shared
// cluster (up).
func setup() (*suite, error) {
	k8sBin, err := testenv.BinaryAssets()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "exagent-e2e-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(work, "bin")
	st := &suite{root: testenv.RepoRoot(), work: work, bin: bin, k8sBin: k8sBin, dir: filepath.Join(work, "cluster"),
		build: procs.Builder{Dir: bin}}
	if _, err := st.build.Build(procs.ManagerRelease, procs.Plugin, procs.Devcluster); err != nil {
		return st, err
	}
	return st, nil
}

// up starts the shared cluster on first use; a start that failed fails
// every test that needs it.
func (st *suite) up(t *testing.T) {
	t.Helper()
	st.upOnce.Do(func() { st.upErr = st.startCluster() })
	if st.upErr != nil {
		t.Fatalf("starting the shared cluster: %v", st.upErr)
	}
}

func (st *suite) startCluster() error {
	var err error
	if st.webhookPort, err = procs.FreePort(); err != nil {
		return err
	}
	if st.metricsPort, err = procs.FreePort(); err != nil {
		return err
	}
	if st.triggerPort, err = procs.FreePort(); err != nil {
		return err
	}
	if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return err
	}
	st.devcluster, err = procs.StartDevcluster(procs.DevclusterSpec{
		Bin: st.build.Path("devcluster"), Dir: st.dir, Root: st.root, WebhookPort: st.webhookPort, Users: users,
		Env: st.envWith(filepath.Join(st.dir, "kubeconfig")), Log: filepath.Join(st.work, "devcluster.out"),
	})
	if err != nil {
		return err
	}
	return st.startManager()
}

// startManager starts bin/manager as its own identity — devcluster's
// DIR/manager.kubeconfig, the user of ServiceAccount
// exagent-system/exagent-manager bound to config/rbac as on a cluster
// (docs/architecture.md §9) — and waits until its webhook server accepts
// connections. So every e2e test runs the manager under its production
// RBAC, and the admin the tests use is a person who may decide.
func (st *suite) startManager() error {
	st.managers++
	kubeconfig := filepath.Join(st.dir, "manager.kubeconfig")
	p, err := procs.StartManager(procs.ManagerSpec{
		Bin: st.build.Path("manager"), Kubeconfig: kubeconfig,
		Args: []string{
			"--webhook-cert-dir", filepath.Join(st.dir, "webhook"),
			// Only devcluster's apiserver, with its client certificate, is answered.
			"--webhook-client-ca", filepath.Join(st.dir, "webhook", "client-ca.crt"),
			"--webhook-port", strconv.Itoa(st.webhookPort),
			"--metrics-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(st.metricsPort)),
			"--health-probe-bind-address", "0",
			"--trigger-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(st.triggerPort)),
			// As in a pod (POD_NAMESPACE): admitted decisions are signed, and
			// the controller rejects a decision that skipped the webhook.
			"--decision-signing-secret", "exagent-system/exagent-decision-seal",
			// The tests' tool and model servers are on 127.0.0.1, which the
			// egress policy denies by default.
			"--egress-allow-cidrs", "127.0.0.1/32",
		},
		Env: st.envWith(kubeconfig), Log: filepath.Join(st.work, fmt.Sprintf("manager-%d.log", st.managers)),
		Ready: procs.Listening(net.JoinHostPort("127.0.0.1", strconv.Itoa(st.webhookPort))), Timeout: time.Minute,
	})
	if err != nil {
		return err
	}
	st.manager = p
	return nil
}

func (st *suite) teardown() error {
	var errs []error
	if st.manager != nil {
		if err := st.manager.Stop(syscall.SIGTERM, 20*time.Second); err != nil && !procs.IsSignalExit(err) {
			errs = append(errs, fmt.Errorf("manager: %w", err))
		}
	}
	if st.devcluster != nil {
		// A clean stop is part of devcluster's contract: exit status 0.
		if err := st.devcluster.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("devcluster: %w\n%s", err, st.devcluster.Tail()))
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
// kubeconfig of user ("" is the admin) of the shared cluster (started here
// when no test has yet).
func (st *suite) env(t *testing.T, user string) []string {
	t.Helper()
	return st.envWith(st.kubeconfig(t, user))
}

// kubeconfig is the path of user's kubeconfig ("" is the admin) of the
// shared cluster (started here when no test has yet).
func (st *suite) kubeconfig(t *testing.T, user string) string {
	t.Helper()
	st.up(t)
	if user == "" {
		return filepath.Join(st.dir, "kubeconfig")
	}
	return filepath.Join(st.dir, user+".kubeconfig")
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
