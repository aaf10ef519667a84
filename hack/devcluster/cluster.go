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

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// options is what the flags configure.
type options struct {
	Dir         string
	Root        string
	Users       []user
	WebhookHost string
	WebhookPort int
	// ManagerNamespace is created for the manager's own objects.
	ManagerNamespace string
	// DataDir, when set, keeps etcd's data and the cluster's identity
	// (address, certificates) across restarts (see dataDir).
	DataDir string
}

// cluster is a running control plane and the log files it writes to.
type cluster struct {
	env  *envtest.Environment
	logs []*os.File
	// With --data-dir: the webhook configurations and the CA bundle of the
	// serving pair kept there.
	mut       []*admissionv1.MutatingWebhookConfiguration
	val       []*admissionv1.ValidatingWebhookConfiguration
	webhookCA []byte
	// controllers is kube-controller-manager with the garbage collector,
	// the namespace controller and the storage version migrator, as on
	// every real cluster (testenv.LocalControllers).
	controllers *testenv.ControllerManager
	// webhookClient is the apiserver's client certificate for the webhooks.
	webhookClient *testenv.WebhookClient
}

// start builds (or reuses) the binaries, boots etcd and kube-apiserver,
// installs what the manager and the users need, and writes the kubeconfigs.
func start(ctx context.Context, o options) (*cluster, error) {
	for _, sub := range []string{"", "logs", "webhook"} {
		if err := os.MkdirAll(filepath.Join(o.Dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", filepath.Join(o.Dir, sub), err)
		}
	}
	logf("locating kube-apiserver, kube-controller-manager, etcd and kubectl (hack/k8s-binaries.sh; the first build takes minutes)")
	assets, err := testenv.BinaryAssets()
	if err != nil {
		return nil, err
	}

	mut, val, err := readWebhooks(filepath.Join(o.Root, "config", "webhook", "manifests.yaml"), o.WebhookHost, o.WebhookPort)
	if err != nil {
		return nil, err
	}

	c := &cluster{}
	apiLog, err := c.openLog(o.Dir, "kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	etcdLog, err := c.openLog(o.Dir, "etcd.log")
	if err != nil {
		return nil, err
	}

	c.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(o.Root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// The registered configuration is config/webhook's with URL
		// clientConfigs on WebhookHost:WebhookPort; envtest generates a
		// self-signed serving certificate for that host and sets it as the
		// CA bundle.
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks:   mut,
			ValidatingWebhooks: val,
			LocalServingHost:   o.WebhookHost,
			LocalServingPort:   o.WebhookPort,
		},
		Scheme: testenv.Scheme(),
	}
	api := c.env.ControlPlane.GetAPIServer()
	api.Out, api.Err = apiLog, apiLog
	c.env.ControlPlane.Etcd = &envtest.Etcd{Out: etcdLog, Err: etcdLog}
	// The apiserver calls the webhooks with a client certificate of its own,
	// and the manager is started with --webhook-client-ca
	// DIR/webhook/client-ca.crt, as docs/install.md configures a cluster:
	// only the apiserver may ask the webhooks to stamp and sign an identity.
	// With --data-dir the CA is kept, so a manager still running trusts the
	// restarted apiserver.
	clientDir := filepath.Join(o.Dir, "webhook-client")
	if o.DataDir != "" {
		clientDir = dataDir(o.DataDir).path("webhook-client")
	}
	if c.webhookClient, err = testenv.NewWebhookClient(clientDir); err != nil {
		c.closeLogs()
		return nil, err
	}
	c.webhookClient.Configure(api)
	if o.DataDir != "" {
		if err := c.useDataDir(dataDir(o.DataDir), mut, val, o.WebhookHost); err != nil {
			c.closeLogs()
			return nil, err
		}
	}

	logf("starting etcd and kube-apiserver (logs in %s)", filepath.Join(o.Dir, "logs"))
	cfg, err := c.env.Start()
	if err != nil {
		c.closeLogs()
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	if o.DataDir != "" {
		if err := dataDir(o.DataDir).remember(c.env); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	if err := c.install(ctx, cfg, o); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *cluster) install(ctx context.Context, cfg *rest.Config, o options) error {
	cl, err := client.New(cfg, client.Options{Scheme: c.env.Scheme})
	if err != nil {
		return fmt.Errorf("building a client: %w", err)
	}
	certDir, ca := c.env.WebhookInstallOptions.LocalServingCertDir, c.env.WebhookInstallOptions.LocalServingCAData
	if o.DataDir != "" {
		certDir, ca = dataDir(o.DataDir).path("webhook"), c.webhookCA
		if err := c.installKeptWebhooks(ctx, cl); err != nil {
			return err
		}
	}
	if err := copyWebhookCerts(certDir, ca, filepath.Join(o.Dir, "webhook")); err != nil {
		return err
	}
	if err := copyFile(c.webhookClient.CAFile, filepath.Join(o.Dir, "webhook", webhookClientCA), 0o644); err != nil {
		return fmt.Errorf("writing the webhook client CA: %w", err)
	}
	n, err := installClusterRoles(ctx, cl, filepath.Join(o.Root, "config", "rbac"))
	if err != nil {
		return err
	}
	// The admission policies that keep runs' and decisions' specs
	// immutable belong with the CRDs (config/policy).
	p, err := testenv.InstallPolicies(ctx, cl, o.Root)
	if err != nil {
		return err
	}
	// The manager's namespace, as on a real cluster: the manager keeps the
	// Secret with its decision signing key there (--decision-signing-secret).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.ManagerNamespace}}
	if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", o.ManagerNamespace, err)
	}
	m, err := installManagerRBAC(ctx, cl, filepath.Join(o.Root, "config", "rbac"), o.ManagerNamespace)
	if err != nil {
		return err
	}
	logf("installed the CRDs, %d admission policy objects, %d ClusterRoles, the webhook configuration (https://%s:%d), namespace %s and the manager's ServiceAccount, Role and bindings (%d objects)",
		p, n, o.WebhookHost, o.WebhookPort, o.ManagerNamespace, m)

	// The garbage collector deletes what a deleted run owned (its
	// segments, decisions and child runs), as on every real cluster.
	kcmLog, err := c.openLog(o.Dir, "kube-controller-manager.log")
	if err != nil {
		return err
	}
	if c.controllers, err = testenv.StartControllerManager(ctx, &c.env.ControlPlane, cl, c.env.BinaryAssetsDirectory,
		filepath.Join(o.Dir, "kube-controller-manager"), kcmLog); err != nil {
		return err
	}
	logf("started kube-controller-manager with controllers %v (log in %s)", testenv.LocalControllers, kcmLog.Name())

	if err := writeKubeconfig(filepath.Join(o.Dir, "kubeconfig"), "admin", cfg); err != nil {
		return err
	}
	// The manager's own identity: its ServiceAccount's user, never the admin.
	mu := managerUser(o.ManagerNamespace)
	mc, err := c.env.AddUser(mu, nil)
	if err != nil {
		return fmt.Errorf("provisioning the manager's user %q: %w", mu.Name, err)
	}
	if err := writeKubeconfig(filepath.Join(o.Dir, managerKubeconfig), managerServiceAccount, mc.Config()); err != nil {
		return err
	}
	logf("the manager's identity %s: %s", mu.Name, filepath.Join(o.Dir, managerKubeconfig))
	for _, u := range o.Users {
		au, err := c.env.AddUser(envtest.User{Name: u.Name, Groups: u.Groups}, nil)
		if err != nil {
			return fmt.Errorf("provisioning user %q: %w", u.Name, err)
		}
		path := filepath.Join(o.Dir, u.Name+".kubeconfig")
		if err := writeKubeconfig(path, u.Name, au.Config()); err != nil {
			return err
		}
		logf("user %s (groups %v): %s", u.Name, u.Groups, path)
	}
	return nil
}

// Stop stops kube-controller-manager, kube-apiserver and etcd and removes
// envtest's temporary folders.
func (c *cluster) Stop() error {
	err := errors.Join(c.controllers.Stop(), c.env.Stop())
	c.closeLogs()
	return err
}

func (c *cluster) openLog(dir, name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(dir, "logs", name))
	if err != nil {
		return nil, fmt.Errorf("creating log file: %w", err)
	}
	c.logs = append(c.logs, f)
	return f, nil
}

func (c *cluster) closeLogs() {
	for _, f := range c.logs {
		_ = f.Close()
	}
	c.logs = nil
}

// useDataDir configures the control plane on a data directory: etcd's data
// and the apiserver's identity, and the webhook serving pair kept there
// (the CA bundle set on the registered configuration by us: envtest
// generates a new pair on every start otherwise).
func (c *cluster) useDataDir(d dataDir, mut []*admissionv1.MutatingWebhookConfiguration,
	val []*admissionv1.ValidatingWebhookConfiguration, host string) error {
	if err := d.prepare(); err != nil {
		return err
	}
	st, err := d.loadState()
	if err != nil {
		return err
	}
	if err := d.configure(c.env, st); err != nil {
		return err
	}
	ca, err := d.webhookServing(host)
	if err != nil {
		return err
	}
	c.mut, c.val, c.webhookCA = mut, val, ca
	return nil
}

// installKeptWebhooks registers the webhook configurations, and the CRDs'
// conversion webhook, with the CA of the serving pair kept in the data
// directory. envtest installs them with a pair it generates at every
// start; this replaces its CA bundle.
func (c *cluster) installKeptWebhooks(ctx context.Context, cl client.Client) error {
	if err := c.keepConversionCA(ctx, cl); err != nil {
		return err
	}
	var objs []client.Object
	for _, m := range c.mut {
		m = m.DeepCopy()
		for i := range m.Webhooks {
			m.Webhooks[i].ClientConfig.CABundle = c.webhookCA
		}
		objs = append(objs, m)
	}
	for _, v := range c.val {
		v = v.DeepCopy()
		for i := range v.Webhooks {
			v.Webhooks[i].ClientConfig.CABundle = c.webhookCA
		}
		objs = append(objs, v)
	}
	for _, o := range objs {
		existing := o.DeepCopyObject().(client.Object)
		if err := cl.Get(ctx, client.ObjectKeyFromObject(o), existing); err != nil {
			return fmt.Errorf("reading webhook configuration %s: %w", o.GetName(), err)
		}
		o.SetResourceVersion(existing.GetResourceVersion())
		if err := cl.Update(ctx, o); err != nil {
			return fmt.Errorf("installing webhook configuration %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// keepConversionCA sets the CA bundle of every CRD envtest pointed at the
// conversion webhook to the kept serving pair's: the manager serves that
// pair, and with envtest's own bundle every read that needs a conversion
// (an object stored in another version than the one asked for) fails with
// "x509: certificate signed by unknown authority".
func (c *cluster) keepConversionCA(ctx context.Context, cl client.Client) error {
	for _, crd := range c.env.CRDs {
		if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
			continue
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
			"webhook": map[string]any{"clientConfig": map[string]any{"caBundle": c.webhookCA}}}}})
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		u.SetName(crd.Name)
		if err := cl.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("setting the conversion CA bundle of CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}
