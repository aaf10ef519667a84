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

package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// RequireClientCert returns the webhook server's TLS option that asks every
// caller for a client certificate and refuses, during the handshake, one
// that does not chain to a CA of caFile (a PEM bundle): the manager's
// --webhook-client-ca (webhook.RequireClientCert, whose comment says why the
// webhook needs it). A caller with no certificate is let through the
// handshake: kube-apiserver calls CRD conversion webhooks without the
// admission client certificate, so the refusal of such callers is per path
// (webhook.GateClientCerts: every admission path, never /convert).
// It lives here, beside the certificates it checks, so that the test
// control plane (internal/testing/testenv) can require what the manager
// requires without importing the webhook package it serves.
//
// The file is read once: a new CA takes effect when the manager restarts.
func RequireClientCert(caFile string) (func(*tls.Config), error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the webhook client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("the webhook client CA %s holds no PEM certificate", caFile)
	}
	return func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}, nil
}
