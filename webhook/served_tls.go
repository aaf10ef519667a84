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

package webhook

import (
	"crypto/tls"

	"github.com/exagent-io/exagent/internal/certs"
)

// RequireClientCert returns the webhook server's TLS option that refuses,
// during the handshake, every caller whose client certificate does not chain
// to a CA of caFile (a PEM bundle): the manager's --webhook-client-ca. A
// caller with no certificate passes the handshake and is refused by every
// admission path (GateClientCerts), but for /convert.
//
// Why: the mutating webhook stamps spec.actor and spec.requestedBy from the
// AdmissionReview's userInfo and signs them (authz.Signer). Without this,
// anything that reaches the webhook's port — a pod in the cluster, a
// port-forward — can POST a review claiming any user and read back a patch
// with that user's signature. With it, only the holder of a certificate from
// this CA — the kube-apiserver, given one through its
// --admission-control-config-file (docs/install.md, "The apiserver's client
// certificate") — is answered at all.
//
// The check itself is internal/certs' (certs.RequireClientCert), which the
// test control plane shares. The file is read once: a new CA takes effect
// when the manager restarts.
// Use a CA that signs only the apiserver's webhook client certificate; the
// cluster's own client CA also signs every kubelet's and person's certificate,
// and any of them would then be let in.
func RequireClientCert(caFile string) (func(*tls.Config), error) {
	return certs.RequireClientCert(caFile)
}
