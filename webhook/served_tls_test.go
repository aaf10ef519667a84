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

package webhook_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/webhook"
)

// TestRequireClientCert: with --webhook-client-ca, a real TLS handshake
// without a client certificate, or with one another CA signed, is refused
// before any handler runs; one the CA signed is served. (The apiserver's
// side — that it presents such a certificate — is
// internal/testing/testenv's TestApiserverPresentsWebhookClientCert.)
func TestRequireClientCert(t *testing.T) {
	ours, err := testenv.NewWebhookClient(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := testenv.NewWebhookClient(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	require, err := webhook.RequireClientCert(ours.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	// The server's own certificate is not under test: the callers skip
	// verifying it, so only the client certificate decides.
	serving, err := theirs.Issue("webhook")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{serving}, MinVersion: tls.VersionTLS12}
	require(cfg)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int32
	answer := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, `{"allowed":true}`)
	})
	mux := http.NewServeMux()
	mux.Handle("/mutate", webhook.RequireVerifiedPeer(answer)) // as GateClientCerts registers admission paths
	mux.Handle(webhook.ConvertPath, answer)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	post := func(path string, certs ...tls.Certificate) (int, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			//nolint:gosec // the server's certificate is not under test
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs, MinVersion: tls.VersionTLS12},
		}}
		defer c.CloseIdleConnections()
		resp, err := c.Post("https://"+ln.Addr().String()+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return 0, err
		}
		return resp.StatusCode, resp.Body.Close()
	}
	otherCert, err := theirs.Issue("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	ourCert, err := ours.Issue("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		path      string
		certs     []tls.Certificate
		wantServe bool
		wantTLS   bool // refused at the handshake, else with 403
	}{
		"admission, no client certificate":       {path: "/mutate"},
		"admission, a certificate of another CA": {path: "/mutate", certs: []tls.Certificate{otherCert}, wantTLS: true},
		"admission, a certificate of the CA":     {path: "/mutate", certs: []tls.Certificate{ourCert}, wantServe: true},
		// kube-apiserver calls conversion webhooks with no client certificate.
		"conversion, no client certificate":       {path: webhook.ConvertPath, wantServe: true},
		"conversion, a certificate of another CA": {path: webhook.ConvertPath, certs: []tls.Certificate{otherCert}, wantTLS: true},
	} {
		t.Run(name, func(t *testing.T) {
			before := served.Load()
			code, err := post(tc.path, tc.certs...)
			if got := served.Load() > before; got != tc.wantServe {
				t.Fatalf("served %v (HTTP %d, error %v); want served %v", got, code, err, tc.wantServe)
			}
			switch {
			case tc.wantTLS && (err == nil || !strings.Contains(err.Error(), "tls: ")):
				t.Errorf("refused with HTTP %d, error %v; want a TLS alert", code, err)
			case !tc.wantTLS && !tc.wantServe && code != http.StatusForbidden:
				t.Errorf("refused with HTTP %d, error %v; want 403", code, err)
			}
		})
	}
}

// TestRequireClientCertRefusesAnUnusableCA: a flag that names no CA stops
// the manager at start, rather than serving everyone.
func TestRequireClientCertRefusesAnUnusableCA(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"missing": filepath.Join(dir, "absent.crt"), "not PEM": notPEM} {
		if _, err := webhook.RequireClientCert(file); err == nil {
			t.Errorf("%s: RequireClientCert(%s) = nil error", name, file)
		}
	}
}
