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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// The files a WebhookClient keeps in its folder.
const (
	// WebhookClientCAFile is the CA's certificate: the manager's --webhook-client-ca.
	WebhookClientCAFile   = "webhook-client-ca.crt"
	webhookClientCAKey    = "webhook-client-ca.key"
	webhookClientKubeconf = "admission-kubeconfig.yaml"
	admissionConfigFile   = "admission-config.yaml"
)

// apiserverClientName is the subject of the certificate the apiserver
// presents to admission webhooks.
const apiserverClientName = "kube-apiserver-webhook-client"

// WebhookClient is the client certificate the apiserver presents to every
// admission webhook, and the CA that signs it: what a cluster configures
// through the apiserver's --admission-control-config-file
// (docs/install.md, "The apiserver's client certificate"), so that the
// webhook server, given the CA (--webhook-client-ca), answers the apiserver
// and nobody else. The test environments and hack/devcluster run with it,
// so every test that goes through admission goes through this handshake.
type WebhookClient struct {
	// CAFile is the CA's certificate (PEM).
	CAFile string
	// AdmissionConfigFile is the AdmissionConfiguration the apiserver is
	// started with: both webhook plugins present the client certificate of
	// a kubeconfig beside it to every webhook ("*").
	AdmissionConfigFile string

	ca    *x509.Certificate
	caKey crypto.Signer
}

// NewWebhookClient writes a WebhookClient into dir: the CA (kept when dir
// already holds one, so a control plane restarted on the same folder keeps
// trusting the same CA), a fresh client certificate it signs, the admission
// kubeconfig that names it and the AdmissionConfiguration.
func NewWebhookClient(dir string) (*WebhookClient, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	w := &WebhookClient{CAFile: filepath.Join(dir, WebhookClientCAFile), AdmissionConfigFile: filepath.Join(dir, admissionConfigFile)}
	if err := w.loadOrCreateCA(filepath.Join(dir, webhookClientCAKey)); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := w.issuePEM(apiserverClientName)
	if err != nil {
		return nil, err
	}
	// The apiserver picks a kubeconfig user by the webhook's host (and
	// port); "*" matches every webhook, wherever it is served.
	kubeconfig := map[string]any{
		"apiVersion": "v1", "kind": "Config",
		"users": []any{map[string]any{"name": "*", "user": map[string]any{
			"client-certificate-data": certPEM, "client-key-data": keyPEM,
		}}},
	}
	kcPath := filepath.Join(dir, webhookClientKubeconf)
	if err := writeYAML(kcPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	plugin := func(name string) map[string]any {
		return map[string]any{"name": name, "configuration": map[string]any{
			"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration", "kubeConfigFile": kcPath,
		}}
	}
	admission := map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
		"plugins": []any{plugin("ValidatingAdmissionWebhook"), plugin("MutatingAdmissionWebhook")},
	}
	if err := writeYAML(w.AdmissionConfigFile, admission, 0o600); err != nil {
		return nil, err
	}
	return w, nil
}

// Configure makes api present the client certificate to every admission
// webhook it calls.
func (w *WebhookClient) Configure(api *envtest.APIServer) {
	api.Configure().Set("admission-control-config-file", w.AdmissionConfigFile)
}

// Issue returns a client certificate for name signed by the CA: a test's
// stand-in for the apiserver, or for someone who holds the CA's key.
func (w *WebhookClient) Issue(name string) (tls.Certificate, error) {
	certPEM, keyPEM, err := w.issuePEM(name)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func (w *WebhookClient) loadOrCreateCA(keyPath string) error {
	certPEM, certErr := os.ReadFile(w.CAFile)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return fmt.Errorf("reading the webhook client CA kept in %s: %w", filepath.Dir(keyPath), err)
		}
		ca, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return fmt.Errorf("parsing the webhook client CA: %w", err)
		}
		signer, ok := pair.PrivateKey.(crypto.Signer)
		if !ok {
			return errors.New("the webhook client CA's key cannot sign")
		}
		w.ca, w.caKey = ca, signer
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the webhook client CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "exagent test webhook client CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("creating the webhook client CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parsing the webhook client CA: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the webhook client CA key: %w", err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return fmt.Errorf("writing the webhook client CA key: %w", err)
	}
	if err := os.WriteFile(w.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("writing the webhook client CA: %w", err)
	}
	w.ca, w.caKey = ca, key
	return nil
}

// issuePEM returns a client certificate for name signed by the CA, and its
// key, both PEM.
func (w *WebhookClient) issuePEM(name string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a client key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, w.ca, key.Public(), w.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the client certificate of %s: %w", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the client key of %s: %w", name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

func writeYAML(path string, v any, mode os.FileMode) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
