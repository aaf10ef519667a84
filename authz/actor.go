package authz

import (
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// CredentialIDKey is the user-info extra the apiserver's own authenticators
// set for a presented credential: client certificates (X509SHA256=…) and
// ServiceAccount tokens (the token's JTI).
const CredentialIDKey = "authentication.kubernetes.io/credential-id"

// ActorFromUserInfo is the identity the apiserver authenticated for an
// admission request, as stamped into spec.actor and spec.requestedBy.
//
// The apiserver does not tell admission webhooks that a request was
// impersonated, nor by whom: it replaces the user info with the impersonated
// one. What impersonation does change is the credential ID: a request
// authenticated by a client certificate or a ServiceAccount token always
// carries one, and an impersonated request carries none unless the
// impersonator also impersonates that extra (which needs its own
// impersonate permission on userextras). So an identity without a credential
// ID is recorded as Impersonated. Users of authenticators that issue no
// credential ID (OIDC, token webhooks) are therefore recorded as impersonated
// too; the audit log names the real impersonator, which ImpersonatedBy
// cannot (it stays empty).
func ActorFromUserInfo(u authenticationv1.UserInfo) exagentv1.Actor {
	return exagentv1.Actor{
		Username:     u.Username,
		UID:          u.UID,
		Groups:       slices.Clone(u.Groups),
		Impersonated: len(u.Extra[CredentialIDKey]) == 0,
	}
}

// SameActor reports whether a client-supplied actor says exactly what the
// apiserver authenticated. Group order is not significant.
func SameActor(a, b exagentv1.Actor) bool {
	if a.Username != b.Username || a.UID != b.UID ||
		a.Impersonated != b.Impersonated || a.ImpersonatedBy != b.ImpersonatedBy {
		return false
	}
	ga, gb := slices.Clone(a.Groups), slices.Clone(b.Groups)
	slices.Sort(ga)
	slices.Sort(gb)
	return slices.Equal(slices.Compact(ga), slices.Compact(gb))
}
