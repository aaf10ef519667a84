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

package v1beta1

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SecretKeySelector selects one key of a Secret in the same namespace.
type SecretKeySelector struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key within the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// CredentialKind is what the apiserver's authenticator reported about the
// credential a request presented, read from the user info it sends the
// admission webhook (the credential-id extra: "X509SHA256=…" for a client
// certificate, "JTI=…" for a token with a JWT ID). Only what that evidence
// shows is recorded; everything else is Unknown.
// +kubebuilder:validation:Enum=Certificate;ServiceAccountToken;JWT;Unknown
type CredentialKind string

const (
	// CredentialCertificate: a client certificate (credential id X509SHA256=…).
	CredentialCertificate CredentialKind = "Certificate"
	// CredentialServiceAccountToken: a bound ServiceAccount token (a
	// system:serviceaccount: user with credential id JTI=…).
	CredentialServiceAccountToken CredentialKind = "ServiceAccountToken"
	// CredentialJWT: another JWT whose authenticator reported its jti
	// claim (structured authentication / OIDC issuers that set one).
	CredentialJWT CredentialKind = "JWT"
	// CredentialUnknown: the apiserver gave no credential id — an OIDC or
	// webhook token without one, a static or legacy token, or a request
	// made by impersonation (which the apiserver does not tell webhooks
	// about) — or one exagent does not recognise.
	CredentialUnknown CredentialKind = "Unknown"
)

// Actor is an authenticated identity as the apiserver saw it, stamped by the
// admission webhook from the request's userInfo. Clients never author it.
type Actor struct {
	// username of the authenticated user.
	// +required
	// +kubebuilder:validation:MaxLength=512
	Username string `json:"username"`
	// uid of the authenticated user, when the authenticator provides one.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	UID string `json:"uid,omitempty"`
	// groups of the authenticated user.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
	// credential is the kind of credential the apiserver authenticated
	// (Certificate, ServiceAccountToken, JWT), or Unknown when its user
	// info carried no evidence of one. Empty on records stamped before
	// exagent recorded it.
	// +optional
	Credential CredentialKind `json:"credential,omitempty"`
	// impersonated is true only when the user info the apiserver sent
	// carried evidence that the request was made by impersonation; the
	// impersonator is then recorded in impersonatedBy. kube-apiserver (up to
	// 1.37 at least) gives admission webhooks no such evidence, so requests
	// made with --as are recorded as the impersonated user with credential
	// Unknown; the apiserver's audit log names the impersonator. Records
	// stamped before credential existed used impersonated: true to mean
	// "no credential id was seen" (docs/observability.md, "Who decided").
	// +optional
	Impersonated bool `json:"impersonated,omitempty"`
	// impersonatedBy is the username that impersonated this actor.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ImpersonatedBy string `json:"impersonatedBy,omitempty"`
}
