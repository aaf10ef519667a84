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
	"crypto/x509"
	"encoding/pem"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestClientCASurvivesARestart: the client CA kept in --data-dir is the
// same after a reload, so a certificate signed before verifies after.
func TestClientCASurvivesARestart(t *testing.T) {
	d := dataDir(t.TempDir())
	first, err := loadClientCA(d.path("client-ca.crt"), d.path("client-ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := first.AddUser(envtest.User{Name: "alice", Groups: []string{"resolvers"}}, &rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := loadClientCA(d.path("client-ca.crt"), d.path("client-ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	if !again.cert.Equal(first.cert) {
		t.Fatal("the reloaded client CA differs from the first")
	}
	block, _ := pem.Decode(cfg.CertData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(again.cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("a user signed before the restart does not verify after it: %v", err)
	}
	if cert.Subject.CommonName != "alice" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "resolvers" {
		t.Errorf("subject %v, want CN alice O resolvers", cert.Subject)
	}
}

// TestStateRoundTrip: the apiserver port chosen at the first start is read back.
func TestStateRoundTrip(t *testing.T) {
	d := dataDir(t.TempDir())
	if st, err := d.loadState(); err != nil || st.APIServerPort != 0 {
		t.Fatalf("empty data dir: %+v %v", st, err)
	}
	if err := d.saveState(state{APIServerPort: 41234}); err != nil {
		t.Fatal(err)
	}
	if st, err := d.loadState(); err != nil || st.APIServerPort != 41234 {
		t.Fatalf("reloaded %+v %v", st, err)
	}
}
