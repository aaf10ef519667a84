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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/exagent-io/exagent/internal/certs"
)

// dataDir is what --data-dir keeps so that a control plane started again
// on it is the same cluster to everyone who knew the first one: etcd's
// data (every object, resourceVersions going on from where they stopped),
// the apiserver's address and serving certificate, the client-certificate
// CA (kubeconfigs written before keep working) and the webhook serving
// pair the registered webhook configuration trusts (a manager started
// before keeps serving admission).
type dataDir string

// state is the part of the cluster's identity that is not a file of its own.
type state struct {
	APIServerPort int `json:"apiserverPort"`
}

func (d dataDir) path(parts ...string) string {
	return filepath.Join(append([]string{string(d)}, parts...)...)
}

func (d dataDir) prepare() error {
	for _, sub := range []string{"etcd", "apiserver", "webhook"} {
		if err := os.MkdirAll(d.path(sub), 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d.path(sub), err)
		}
	}
	return nil
}

func (d dataDir) loadState() (state, error) {
	var st state
	b, err := os.ReadFile(d.path("state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("parsing %s: %w", d.path("state.json"), err)
	}
	return st, nil
}

func (d dataDir) saveState(st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return os.WriteFile(d.path("state.json"), b, 0o600)
}

// configure points the control plane at the data directory: etcd's data,
// the apiserver's certificates and port (when a previous start chose one),
// and a client CA that survives restarts.
func (d dataDir) configure(env *envtest.Environment, st state) error {
	env.ControlPlane.Etcd.DataDir = d.path("etcd")
	api := env.ControlPlane.GetAPIServer()
	api.CertDir = d.path("apiserver")
	if st.APIServerPort != 0 {
		api.ListenAddr = envtest.ListenAddr{Address: "127.0.0.1", Port: strconv.Itoa(st.APIServerPort)}
		ca, err := os.ReadFile(d.path("apiserver", "serving-ca.crt"))
		if err != nil {
			return fmt.Errorf("the data directory has an apiserver port but no serving CA: %w", err)
		}
		// envtest generates the serving pair only when apiserver.crt is
		// missing, and then keeps its CA in memory only: give it back.
		api.CA = ca
	}
	authn, err := loadClientCA(d.path("client-ca.crt"), d.path("client-ca.key"))
	if err != nil {
		return err
	}
	api.Authn = authn
	return nil
}

// remember saves what the first start chose.
func (d dataDir) remember(env *envtest.Environment) error {
	api := env.ControlPlane.GetAPIServer()
	port, err := strconv.Atoi(api.Port)
	if err != nil {
		return fmt.Errorf("apiserver port %q: %w", api.Port, err)
	}
	if err := os.WriteFile(d.path("apiserver", "serving-ca.crt"), api.CA, 0o600); err != nil {
		return err
	}
	return d.saveState(state{APIServerPort: port})
}

// webhookServing returns the CA bundle of the webhook serving pair kept in
// DIR/webhook, generating the pair on first use.
func (d dataDir) webhookServing(host string) ([]byte, error) {
	caPath := d.path("webhook", "ca.crt")
	if ca, err := os.ReadFile(caPath); err == nil {
		return ca, nil
	}
	ca, err := certs.GenerateServing(d.path("webhook"), []string{host, "localhost"})
	if err != nil {
		return nil, err
	}
	return ca, os.WriteFile(caPath, ca, 0o644)
}

// clientCA is envtest's client-certificate authenticator with a CA kept on
// disk: users provisioned by an earlier start stay valid.
type clientCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	workDir string
}

var _ envtest.Authn = (*clientCA)(nil)

func loadClientCA(certPath, keyPath string) (*clientCA, error) {
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		cb, _ := pem.Decode(certPEM)
		kb, _ := pem.Decode(keyPEM)
		if cb == nil || kb == nil {
			return nil, fmt.Errorf("client CA in %s: not PEM", certPath)
		}
		cert, err := x509.ParseCertificate(cb.Bytes)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		key, err := x509.ParseECPrivateKey(kb.Bytes)
		if err != nil {
			return nil, fmt.Errorf("client CA key: %w", err)
		}
		return &clientCA{cert: cert, certPEM: certPEM, key: key}, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "exagent-devcluster-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return &clientCA{cert: cert, certPEM: certPEM, key: key}, nil
}

func (c *clientCA) caPath() string { return filepath.Join(c.workDir, "client-cert-auth-ca.crt") }

// Configure tells the apiserver to trust the CA.
func (c *clientCA) Configure(workDir string, args *envtest.Arguments) error {
	c.workDir = workDir
	args.Set("client-ca-file", c.caPath())
	return nil
}

// Start writes the CA where the apiserver reads it.
func (c *clientCA) Start() error { return os.WriteFile(c.caPath(), c.certPEM, 0o640) }

// AddUser signs a client certificate for the user (CN name, O groups).
func (c *clientCA) AddUser(u envtest.User, base *rest.Config) (*rest.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: u.Name, Organization: u.Groups},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("signing a client certificate for %s: %w", u.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(base)
	cfg.CertData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return cfg, nil
}

// Stop has nothing to do: the CA stays for the next start.
func (c *clientCA) Stop() error { return nil }

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
