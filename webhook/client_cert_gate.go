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
	"net/http"

	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// GateClientCerts wraps a webhook server whose TLS asks for the client
// certificate (RequireClientCert) so that every admission path it serves
// answers 403 to a caller that presented none verified, as the handshake
// did before conversion: only /convert answers anyone. kube-apiserver
// calls a CRD's conversion webhook without the client certificate it
// presents to admission webhooks, and a conversion stamps and signs
// nothing: it maps fields between two versions of what the caller sent.
func GateClientCerts(srv crwebhook.Server) crwebhook.Server {
	return gated{Server: srv}
}

type gated struct{ crwebhook.Server }

// Register registers hook behind the certificate check, but for /convert.
func (g gated) Register(path string, hook http.Handler) {
	if path != ConvertPath {
		hook = RequireVerifiedPeer(hook)
	}
	g.Server.Register(path, hook)
}

// RequireVerifiedPeer refuses (403) a request whose TLS connection carries
// no client certificate verified against the CA.
func RequireVerifiedPeer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "a client certificate from the webhook client CA is required (--webhook-client-ca)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
