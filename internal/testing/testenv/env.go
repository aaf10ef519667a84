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

package testenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	exagentv1alpha1 "github.com/exagent-io/exagent/api/v1alpha1"
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/certs"
)

// Scheme returns a scheme with the built-in types and exagent's, both
// versions.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := exagentv1.AddToScheme(s); err != nil {
		panic(err)
	}
	// The deprecated version and its conversions: envtest points the CRDs'
	// conversion at a test's webhook server, which serves /convert.
	if err := exagentv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Env is a running control plane with the CRDs installed.
type Env struct {
	*envtest.Environment
	Client client.Client
	Scheme *runtime.Scheme
	// WebhookClient, with webhooks installed, is the client certificate the
	// apiserver presents to them and its CA; WebhookServerOptions makes the
	// test's webhook server require it, as --webhook-client-ca does.
	WebhookClient *WebhookClient

	tmp         string             // removed by Stop
	controllers *ControllerManager // with Options.GarbageCollector
}

// Options tunes Start.
type Options struct {
	// WithWebhooks installs config/webhook's manifests; the caller serves them
	// on Env.WebhookInstallOptions.LocalServingHost/Port/CertDir.
	WithWebhooks bool
	// MutatingWebhooks and ValidatingWebhooks, when either is set, are
	// installed instead of config/webhook's manifests — an overlay's, as
	// kustomize renders them (namespaceSelector and all) — pointed at the
	// same local server.
	MutatingWebhooks   []*admissionv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionv1.ValidatingWebhookConfiguration
	// EtcdQuotaBytes, when set, is etcd's --quota-backend-bytes (its
	// default is 2 GiB, less than a benchmark that fills it may need).
	EtcdQuotaBytes int64
	// WithoutCRDs starts the control plane with no CRD installed, for a
	// test that installs them itself (the Helm chart's crds/).
	WithoutCRDs bool
	// GarbageCollector runs kube-controller-manager with LocalControllers
	// (the garbage collector and the namespace controller) beside the
	// apiserver, as every real cluster does: a test that deletes a run
	// sees its segments, decisions and children go with it.
	GarbageCollector bool
}

// Start boots kube-apiserver and etcd with the CRDs of config/crd/bases
// and the admission policies of config/policy (unless WithoutCRDs).
// Call Stop when done (typically from TestMain).
func Start(opts Options) (*Env, error) {
	assets, err := BinaryAssets()
	if err != nil {
		return nil, err
	}
	root := RepoRoot()
	e := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if opts.WithoutCRDs {
		e.CRDDirectoryPaths, e.ErrorIfCRDPathMissing = nil, false
	}
	var tmp string
	if opts.WithWebhooks || len(opts.MutatingWebhooks) > 0 || len(opts.ValidatingWebhooks) > 0 {
		if tmp, err = os.MkdirTemp("", "exagent-testenv-"); err != nil {
			return nil, fmt.Errorf("creating a folder for the webhook client certificate: %w", err)
		}
	}
	env, err := start(e, opts, tmp)
	if err != nil && tmp != "" {
		_ = os.RemoveAll(tmp)
	}
	return env, err
}

func start(e *envtest.Environment, opts Options, tmp string) (*Env, error) {
	root := RepoRoot()
	var wc *WebhookClient
	if tmp != "" {
		// The apiserver calls the webhooks with its own client certificate,
		// as a cluster configured for --webhook-client-ca does.
		var err error
		if wc, err = NewWebhookClient(tmp); err != nil {
			return nil, err
		}
		wc.Configure(e.ControlPlane.GetAPIServer())
	}
	switch {
	case len(opts.MutatingWebhooks) > 0 || len(opts.ValidatingWebhooks) > 0:
		e.WebhookInstallOptions = envtest.WebhookInstallOptions{
			MutatingWebhooks: opts.MutatingWebhooks, ValidatingWebhooks: opts.ValidatingWebhooks,
		}
	case opts.WithWebhooks:
		e.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook")},
		}
	}
	if opts.EtcdQuotaBytes > 0 {
		if e.ControlPlane.Etcd == nil {
			e.ControlPlane.Etcd = &envtest.Etcd{}
		}
		e.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.FormatInt(opts.EtcdQuotaBytes, 10))
	}
	scheme := Scheme()
	e.Scheme = scheme
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("client: %w", err)
	}
	if !opts.WithoutCRDs {
		// The API as shipped: its CRDs and the admission policies that keep
		// runs' and decisions' specs immutable (config/policy).
		if _, err := InstallPolicies(context.Background(), c, root); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	env := &Env{Environment: e, Client: c, Scheme: scheme, WebhookClient: wc, tmp: tmp}
	if opts.GarbageCollector {
		dir, err := os.MkdirTemp("", "exagent-kcm-")
		if err == nil {
			env.controllers, err = StartControllerManager(context.Background(), &e.ControlPlane, c, e.BinaryAssetsDirectory, dir, nil)
		}
		if err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	return env, nil
}

// WebhookServerOptions are the options of a webhook server for this Env's
// webhook configurations: where they point (WebhookInstallOptions), their
// serving pair, and — as the manager's --webhook-client-ca — a client
// certificate from the apiserver required at the handshake. extra TLS
// options come first.
func (e *Env) WebhookServerOptions(extra ...func(*tls.Config)) (crwebhook.Options, error) {
	wio := &e.WebhookInstallOptions
	o := crwebhook.Options{Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir, TLSOpts: extra}
	if e.WebhookClient == nil {
		return o, errors.New("the control plane was started without webhooks")
	}
	require, err := certs.RequireClientCert(e.WebhookClient.CAFile)
	if err != nil {
		return o, err
	}
	o.TLSOpts = append(o.TLSOpts, require)
	return o, nil
}

// Stop stops the controller manager, the control plane and removes the
// webhook client's folder.
func (e *Env) Stop() error {
	err := errors.Join(e.controllers.Stop(), e.Environment.Stop())
	if e.tmp != "" {
		err = errors.Join(err, os.RemoveAll(e.tmp))
	}
	return err
}
