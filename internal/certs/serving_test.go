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

package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/exagent-io/exagent/internal/certs"
)

// TestGenerateServing serves TLS with the generated pair and connects with
// a client that trusts only the returned CA, by IP and by name.
func TestGenerateServing(t *testing.T) {
	dir := t.TempDir()
	caPEM, err := certs.GenerateServing(dir, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("tls.key mode = %v, want 0600", mode)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the returned CA is not PEM")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := client.Get("https://" + net.JoinHostPort(host, port))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		_ = resp.Body.Close()
	}
	// A client trusting the system roots only must refuse it.
	if _, err := http.Get(srv.URL); err == nil {
		t.Error("a client without the CA accepted the certificate")
	}
}

func TestGenerateServingNeedsHosts(t *testing.T) {
	if _, err := certs.GenerateServing(t.TempDir(), nil); err == nil {
		t.Error("no error for no hosts")
	}
}
