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

package authz

import (
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// CredentialIDKey is the user-info extra the apiserver's own authenticators
// set for a presented credential: client certificates (X509SHA256=…),
// bound ServiceAccount tokens and JWTs with a jti claim (JTI=…).
const CredentialIDKey = "authentication.kubernetes.io/credential-id"

// The forms of a credential id kube-apiserver writes (k8s.io/apiserver
// pkg/authentication/request/x509 and pkg/authentication/token/jwt).
const (
	credentialIDCertificate = "X509SHA256="
	credentialIDJWT         = "JTI="
	// serviceAccountPrefix is how the apiserver names a ServiceAccount user.
	serviceAccountPrefix = "system:serviceaccount:"
)

// ActorFromUserInfo is the identity the apiserver authenticated for an
// admission request, as stamped into spec.actor and spec.requestedBy: the
// username, uid and groups, and the kind of credential, as far as the
// user info shows it (CredentialKindOf).
//
// Impersonated stays false: it is set from evidence only, and the
// apiserver sends none. Impersonation (legacy or constrained, k8s.io/apiserver
// pkg/endpoints/filters/impersonation) replaces the user info with exactly
// what the Impersonate-* headers ask for and records the impersonator in
// the audit log alone. An impersonated request therefore carries no
// credential id (unless the impersonator also impersonates that extra,
// which needs impersonate on userextras) and is recorded with credential
// Unknown — as are users of OIDC or webhook tokens without a credential
// id, which is why the absence of one proves nothing. Before credential
// existed, that absence was recorded as impersonated: true.
func ActorFromUserInfo(u authenticationv1.UserInfo) exagentv1.Actor {
	return exagentv1.Actor{
		Username:   u.Username,
		UID:        u.UID,
		Groups:     slices.Clone(u.Groups),
		Credential: CredentialKindOf(u),
	}
}

// CredentialKindOf reads the credential kind from the credential-id extra:
// X509SHA256=… is a client certificate; JTI=… a bound ServiceAccount token
// for a system:serviceaccount: user, another JWT otherwise. No id, several,
// or a form kube-apiserver does not write is Unknown.
func CredentialKindOf(u authenticationv1.UserInfo) exagentv1.CredentialKind {
	ids := u.Extra[CredentialIDKey]
	if len(ids) != 1 {
		return exagentv1.CredentialUnknown
	}
	switch id := ids[0]; {
	case strings.HasPrefix(id, credentialIDCertificate) && len(id) > len(credentialIDCertificate):
		return exagentv1.CredentialCertificate
	case strings.HasPrefix(id, credentialIDJWT) && len(id) > len(credentialIDJWT):
		if strings.HasPrefix(u.Username, serviceAccountPrefix) {
			return exagentv1.CredentialServiceAccountToken
		}
		return exagentv1.CredentialJWT
	}
	return exagentv1.CredentialUnknown
}

// SameActor reports whether a client-supplied actor says exactly what the
// apiserver authenticated. Group order is not significant.
func SameActor(a, b exagentv1.Actor) bool {
	if a.Username != b.Username || a.UID != b.UID || a.Credential != b.Credential ||
		a.Impersonated != b.Impersonated || a.ImpersonatedBy != b.ImpersonatedBy {
		return false
	}
	ga, gb := slices.Clone(a.Groups), slices.Clone(b.Groups)
	slices.Sort(ga)
	slices.Sort(gb)
	return slices.Equal(slices.Compact(ga), slices.Compact(gb))
}
