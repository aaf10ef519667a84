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

package model

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/net/http/httpguts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/egress"
	secretread "github.com/exagent-io/exagent/internal/secrets"
)

// secretError is a Secret a model needs that cannot be read. Missing, or
// without its key, or not readable by the manager: a ConfigError naming
// the field (the run fails before any request: the next would meet the
// same). Anything else (the apiserver did not answer) is returned as it
// is, and the request is retried as any failed one.
func secretError(field string, sel exagentv1.SecretKeySelector, err error) error {
	var nokey *secretread.KeyNotFoundError
	switch {
	case apierrors.IsNotFound(err):
		return &ConfigError{Field: field, Reason: exagentv1.ReasonSecretNotFound,
			Err: fmt.Errorf("the Secret %q does not exist in the run's namespace; create it, or fix the reference", sel.Name)}
	case errors.As(err, &nokey):
		return &ConfigError{Field: field, Reason: exagentv1.ReasonSecretKeyNotFound,
			Err: fmt.Errorf("the Secret %q has no key %q; add it, or fix the reference", sel.Name, sel.Key)}
	case apierrors.IsForbidden(err):
		return &ConfigError{Field: field, Reason: exagentv1.ReasonSecretNotReadable,
			Err: fmt.Errorf("the manager may not read Secret %q (%v); is the namespace one the manager serves?", sel.Name, err)}
	}
	return fmt.Errorf("reading %s (Secret %q): %w", field, sel.Name, err)
}

// ConfigError is a model the manager cannot build from the Agent's current
// spec and Secrets: nothing was sent, and the next request would fail the
// same way until the Agent or the Secret is fixed. Field names the spec
// field at fault (spec.model.headers[0].valueFrom, …), Reason is the run's
// status.reason.
type ConfigError struct {
	Field  string
	Reason string
	Err    error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }

// reservedHeaders are set by the provider itself: an Agent's header of
// that name would corrupt the request or its framing.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Transfer-Encoding": true,
	"Connection": true, "Accept-Encoding": true, "Te": true, "Upgrade": true, "Trailer": true,
}

// ReservedHeader reports whether name is a header no Agent may set on a
// model request (admission refuses it too).
func ReservedHeader(name string) bool { return reservedHeaders[http.CanonicalHeaderKey(name)] }

// readHeaders reads the values of spec.headers now (a rotated Secret is
// used by the next request). A value that is not a valid header value
// (a newline would split the request) is a ConfigError.
func readHeaders(ctx context.Context, spec *exagentv1.ModelSpec, secret SecretGetter) (map[string]string, error) {
	if len(spec.Headers) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(spec.Headers))
	for i, h := range spec.Headers {
		f := fmt.Sprintf("spec.model.headers[%d]", i)
		switch {
		case !httpguts.ValidHeaderFieldName(h.Name):
			return nil, &ConfigError{Field: f + ".name", Reason: exagentv1.ReasonInvalidConfiguration,
				Err: fmt.Errorf("%q is not an HTTP header name", h.Name)}
		case ReservedHeader(h.Name):
			return nil, &ConfigError{Field: f + ".name", Reason: exagentv1.ReasonInvalidConfiguration,
				Err: fmt.Errorf("%s is set by the provider itself", http.CanonicalHeaderKey(h.Name))}
		}
		v, err := secret(ctx, h.ValueFrom)
		if err != nil {
			return nil, secretError(f+".valueFrom", h.ValueFrom, err)
		}
		v = strings.TrimRight(v, "\r\n") // a Secret written from a file often ends with a newline
		if !httpguts.ValidHeaderFieldValue(v) {
			return nil, &ConfigError{Field: f + ".valueFrom", Reason: exagentv1.ReasonInvalidConfiguration,
				Err: fmt.Errorf("the value of header %s in Secret %q key %q is not a valid header value (a control character or newline)",
					h.Name, h.ValueFrom.Name, h.ValueFrom.Key)}
		}
		out[http.CanonicalHeaderKey(h.Name)] = v
	}
	return out, nil
}

// readCABundle reads spec.caBundleSecretRef: nil when unset.
func readCABundle(ctx context.Context, spec *exagentv1.ModelSpec, secret SecretGetter) ([]byte, error) {
	ref := spec.CABundleSecretRef
	if ref == nil {
		return nil, nil
	}
	v, err := secret(ctx, *ref)
	if err != nil {
		return nil, secretError("spec.model.caBundleSecretRef", *ref, err)
	}
	if _, err := ParseCABundle([]byte(v)); err != nil {
		return nil, &ConfigError{Field: "spec.model.caBundleSecretRef", Reason: exagentv1.ReasonInvalidConfiguration,
			Err: fmt.Errorf("key %q of Secret %q: %w", ref.Key, ref.Name, err)}
	}
	return []byte(v), nil
}

// MaxCABundleBytes bounds a CA bundle: a few dozen certificates.
const MaxCABundleBytes = 1 << 20

// ParseCABundle reads PEM certificates: at least one, nothing that is not
// a certificate, at most MaxCABundleBytes.
func ParseCABundle(pem []byte) (*x509.CertPool, error) {
	if len(pem) > MaxCABundleBytes {
		return nil, fmt.Errorf("the CA bundle takes %d bytes, more than %d", len(pem), MaxCABundleBytes)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("holds no PEM CERTIFICATE block")
	}
	return pool, nil
}

// trusted holds a client per (shared client, CA bundle): each pools its own
// connections (a connection verified against one bundle is never reused
// under another), and a request with the same bundle reuses them. Bounded:
// the least recently used one is dropped and its idle connections closed.
var trusted = sync.OnceValue(func() *lru.Cache[string, *http.Client] {
	c, _ := lru.NewWithEvict(64, func(_ string, hc *http.Client) { hc.CloseIdleConnections() })
	return c
})

// clientTrusting returns the client of base whose TLS trusts the CA
// bundle only, not the system's roots: an Agent that names its gateway's
// CA says where its model is, and a public CA's certificate for a name
// the gateway's DNS could be tricked into is not that gateway. Its
// connections are dialled under base's egress policy (an egress.Transport
// is required: no bundle opens a way around it).
func clientTrusting(base *http.Client, pem []byte) (*http.Client, error) {
	if len(pem) == 0 {
		return base, nil
	}
	hc := egress.WithoutRedirects(base)
	et, ok := hc.Transport.(*egress.Transport)
	if !ok {
		return nil, fmt.Errorf("a CA bundle needs the manager's egress transport, not %T", hc.Transport)
	}
	sum := sha256.Sum256(pem)
	key := fmt.Sprintf("%p/%s", et, hex.EncodeToString(sum[:]))
	if c, ok := trusted().Get(key); ok {
		return c, nil
	}
	pool, err := ParseCABundle(pem)
	if err != nil {
		return nil, err
	}
	c := *hc
	c.Transport = et.WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	trusted().Add(key, &c)
	return &c, nil
}

// UntrustedError is a model endpoint whose TLS certificate the manager
// does not trust. A re-send would meet the same certificate.
type UntrustedError struct {
	// Bundle says the trust came from model.caBundleSecretRef.
	Bundle bool
	Err    error
}

func (e *UntrustedError) Error() string {
	if e.Bundle {
		return fmt.Sprintf("the model endpoint's TLS certificate is not signed by a CA of spec.model.caBundleSecretRef "+
			"(only those are trusted for this model): %v; put the CA that signed it in that Secret", e.Err)
	}
	return fmt.Sprintf("the model endpoint's TLS certificate is not trusted: %v; if it is signed by an internal CA, "+
		"name that CA in spec.model.caBundleSecretRef", e.Err)
}

func (e *UntrustedError) Unwrap() error { return e.Err }

// certificateError finds a certificate verification failure in err.
func certificateError(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}
