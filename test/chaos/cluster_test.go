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

package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	exagentwebhook "github.com/exagent-io/exagent/webhook"
)

// Users of every control plane: alice approves (exagent-approver), carol
// resolves (group resolvers: exagent-resolver), bob may create decisions
// but holds no right to decide.
const (
	alice = "alice"
	bob   = "bob"
	carol = "carol"
)

var clusterUsers = []string{alice, bob, carol + ":resolvers"}

// signingSecret is the decision-signing Secret every manager and webhook shares.
var signingSecret = types.NamespacedName{Namespace: "exagent-system", Name: authz.DefaultSigningSecretName}

// cluster is one hack/devcluster process: kube-apiserver and etcd.
type cluster struct {
	dir, dataDir string
	webhookPort  int
	proc         *procs.Process
	starts       int
	admin        *rest.Config
	c            client.WithWatch
	users        map[string]client.Client
	stopWebhooks context.CancelFunc
	webhooksDone chan struct{}
	managers     int
}

// startCluster starts devcluster in dir (and on dataDir when set) and
// waits for its ready line.
func startCluster(dir, dataDir string) (*cluster, error) {
	port, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, dataDir: dataDir, webhookPort: port}
	return c, c.start()
}

func (c *cluster) start() error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	c.starts++
	p, err := procs.StartDevcluster(procs.DevclusterSpec{
		Bin: suite.build.Path("devcluster"), Dir: c.dir, Root: suite.root, DataDir: c.dataDir,
		WebhookPort: c.webhookPort, Users: clusterUsers,
		Env: append(os.Environ(), "KUBEBUILDER_ASSETS="+suite.k8sBin),
		Log: filepath.Join(c.dir, fmt.Sprintf("devcluster-%d.log", c.starts)),
	})
	if err != nil {
		return err
	}
	c.proc = p
	if c.admin, err = loadKubeconfig(filepath.Join(c.dir, "kubeconfig")); err != nil {
		return err
	}
	if c.c, err = client.NewWithWatch(c.admin, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return err
	}
	c.users = map[string]client.Client{}
	for _, u := range []string{alice, bob, carol} {
		cfg, err := loadKubeconfig(filepath.Join(c.dir, u+".kubeconfig"))
		if err != nil {
			return err
		}
		if c.users[u], err = client.New(cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
			return err
		}
	}
	return nil
}

// stopPlane stops kube-apiserver and etcd (SIGTERM: devcluster's clean stop).
func (c *cluster) stopPlane() error {
	if c.proc == nil {
		return nil
	}
	err := c.proc.Stop(syscall.SIGTERM, 60*time.Second)
	c.proc = nil
	return err
}

func (c *cluster) stop() error {
	if c.stopWebhooks != nil {
		c.stopWebhooks()
		<-c.webhooksDone
	}
	return c.stopPlane()
}

func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, nil
}

// serveWebhooks serves exagent's admission webhooks from this process, on
// the port and with the serving pair devcluster registered, sealing
// decisions with the key every manager verifies.
func (c *cluster) serveWebhooks() error {
	mgr, err := ctrl.NewManager(rest.CopyConfig(c.admin), ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: c.webhookPort,
			CertDir: filepath.Join(c.dir, "webhook")}),
	})
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	signer, err := authz.LoadSigner(ctx, mgr.GetAPIReader(), mgr.GetClient(), signingSecret)
	if err != nil {
		cancel()
		return fmt.Errorf("decision signing key: %w", err)
	}
	if err := exagentwebhook.SetupWithManager(mgr, exagentwebhook.WithSigner(signer)); err != nil {
		cancel()
		return err
	}
	c.stopWebhooks, c.webhooksDone = cancel, make(chan struct{})
	go func() {
		defer close(c.webhooksDone)
		_ = mgr.Start(ctx)
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.webhookPort))
	return procs.Poll(time.Minute, func() (bool, error) { return procs.Dial(addr), nil })
}

// managerOpts are how one manager process starts.
type managerOpts struct {
	name       string
	failpoints string
	webhooks   bool // serve admission itself (R5); otherwise the suite does
	args       []string
}

// startManager starts bin/manager (built with -tags chaos) against the
// admin kubeconfig and waits until its AgentRun workers run.
func (c *cluster) startManager(o managerOpts) (*procs.Process, error) {
	c.managers++
	args := []string{
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--decision-signing-secret", signingSecret.String(),
		"--holder-identity", fmt.Sprintf("%s-%d", o.name, c.managers),
		// The suite's tool and model servers are on 127.0.0.1, which the
		// egress policy denies by default.
		"--egress-allow-cidrs", "127.0.0.1/32",
	}
	if o.webhooks {
		args = append(args, "--webhook-cert-dir", filepath.Join(c.dir, "webhook"), "--webhook-port", strconv.Itoa(c.webhookPort))
	} else {
		args = append(args, "--enable-webhooks=false")
	}
	return procs.StartManager(procs.ManagerSpec{
		Name: "manager " + o.name, Bin: suite.build.Path("manager"),
		Kubeconfig: filepath.Join(c.dir, "kubeconfig"), Args: append(args, o.args...),
		Env:   append(os.Environ(), "EXAGENT_FAILPOINTS="+o.failpoints),
		Log:   filepath.Join(c.dir, fmt.Sprintf("manager-%02d-%s.log", c.managers, o.name)),
		Ready: procs.Workers(), Timeout: 5 * time.Minute,
	})
}
