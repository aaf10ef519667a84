//go:build upgrade

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

package upgrade

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/internal/testing/procs"
)

// Users of the control plane: alice approves (exagent-approver), carol
// resolves (group resolvers: exagent-resolver).
const (
	alice = "alice"
	carol = "carol"
)

var planeUsers = []string{alice, carol + ":resolvers"}

// signingSecret is the decision-signing Secret every manager uses, as in a
// pod (the chart's and config/default's name).
const signingSecret = "exagent-system/exagent-decision-seal"

// plane is the local control plane of one version: its hack/devcluster
// process on a data directory that outlives it, so that the next version's
// devcluster starts on the same etcd data (and the same apiserver address,
// certificates and webhook serving pair: devcluster --data-dir keeps
// them), as an upgraded cluster keeps its etcd.
type plane struct {
	dir, dataDir string
	webhookPort  int
	k8sBin       string
	starts       int
	managers     int

	proc  *procs.Process
	admin *rest.Config
	// c (the admin) and users speak exagent.io as the version start was
	// given (apiClient).
	c     client.Client
	users map[string]client.Client
}

// start starts the devcluster bin with --root root (the CRDs, RBAC and
// webhook configuration it installs) and loads every kubeconfig it wrote;
// the plane's clients speak exagent.io as gv, a version it serves.
func (p *plane) start(version, bin, root string, gv schema.GroupVersion) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	p.starts++
	proc, err := procs.StartDevcluster(procs.DevclusterSpec{
		Bin: bin, Dir: p.dir, Root: root, DataDir: p.dataDir, WebhookPort: p.webhookPort, Users: planeUsers,
		Env: append(os.Environ(), "KUBEBUILDER_ASSETS="+p.k8sBin),
		Log: filepath.Join(p.dir, fmt.Sprintf("devcluster-%d-%s.log", p.starts, version)),
	})
	if err != nil {
		return fmt.Errorf("devcluster %s: %w", version, err)
	}
	p.proc = proc
	if p.admin, err = loadKubeconfig(filepath.Join(p.dir, "kubeconfig")); err != nil {
		return err
	}
	if p.c, err = client.New(p.admin, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	p.c = speak(p.c, gv)
	p.users = map[string]client.Client{}
	for _, u := range []string{alice, carol} {
		cfg, err := loadKubeconfig(p.kubeconfig(u))
		if err != nil {
			return err
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		p.users[u] = speak(c, gv)
	}
	return nil
}

// stop stops kube-apiserver and etcd (SIGTERM: devcluster's clean stop).
func (p *plane) stop() error {
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

func (p *plane) webhookAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.webhookPort))
}

// startManager starts the manager bin as its own identity — devcluster's
// DIR/manager.kubeconfig, the ServiceAccount exagent-system/exagent-manager
// bound to the installed config/rbac — serving the admission webhooks, and
// waits until they accept connections. extra are further flags (a newer
// manager's).
func (p *plane) startManager(version, bin string, extra ...string) (*procs.Process, error) {
	p.managers++
	name := fmt.Sprintf("manager-%d-%s", p.managers, version)
	args := append([]string{
		"--webhook-cert-dir", filepath.Join(p.dir, "webhook"),
		"--webhook-port", strconv.Itoa(p.webhookPort),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--holder-identity", name,
		// As in a pod: admitted decisions are signed, and the controller
		// rejects a decision that skipped the webhook.
		"--decision-signing-secret", signingSecret,
		// The model, tool and notification servers are on 127.0.0.1, which
		// the egress policy denies by default.
		"--egress-allow-cidrs", "127.0.0.1/32",
	}, extra...)
	return procs.StartManager(procs.ManagerSpec{
		Name: name, Bin: bin, Kubeconfig: filepath.Join(p.dir, "manager.kubeconfig"), Args: args,
		Log:   filepath.Join(p.dir, name+".log"),
		Ready: procs.Listening(p.webhookAddr()), Timeout: 3 * time.Minute,
	})
}

func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}
