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

package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// scheme holds the types the page reads and writes.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{exagentv1.AddToScheme, authorizationv1.AddToScheme, authenticationv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// mapper knows the few kinds the page uses, so that no request — not even
// discovery — is made before the person's own credentials are known, and
// none is made per page view.
var mapper = func() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"AgentRun", "ApprovalDecision", "AgentRunSegment", "Agent", "Conversation"} {
		m.Add(exagentv1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	m.Add(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), meta.RESTScopeRoot)
	m.Add(authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), meta.RESTScopeRoot)
	return m
}()

// errNoToken is a server-mode request without a bearer token.
var errNoToken = errors.New("no bearer token: this page acts only as the person whose token the request carries " +
	"(the single-sign-on proxy forwards it in the Authorization header)")

// identity gives each HTTP request the client it may use: the
// kubeconfig's (local mode) or one carrying the request's own bearer
// token (server mode). There is no third case: the page never uses
// credentials of its own.
type identity struct {
	auth AuthMode
	// local is the kubeconfig's client (local mode).
	local client.WithWatch
	// anonymous is the kubeconfig's server address and CA without any
	// credentials (server mode): each request adds its token.
	anonymous *rest.Config
}

func newIdentity(cfg *Config) (*identity, error) {
	id := &identity{auth: cfg.Auth}
	if cfg.Auth == AuthBearer {
		id.anonymous = rest.AnonymousClientConfig(cfg.REST)
		return id, nil
	}
	c, err := newClient(cfg.REST)
	if err != nil {
		return nil, err
	}
	id.local = c
	return id, nil
}

// clientFor returns the client for r.
func (id *identity) clientFor(r *http.Request) (client.WithWatch, error) {
	if id.auth != AuthBearer {
		return id.local, nil
	}
	token, ok := bearerToken(r)
	if !ok {
		return nil, errNoToken
	}
	cfg := rest.CopyConfig(id.anonymous)
	cfg.BearerToken = token
	return newClient(cfg)
}

// bearerToken is the token of an "Authorization: Bearer …" header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func newClient(cfg *rest.Config) (client.WithWatch, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("building the client: %w", err)
	}
	return c, nil
}

// whoAmI is the person the apiserver sees (a SelfSubjectReview), shown in
// the page's header so the person knows whose authority it acts with.
func whoAmI(r *http.Request, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(r.Context(), review); err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}
