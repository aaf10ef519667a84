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
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/certs"
	"github.com/exagent-io/exagent/internal/egress"
	secretread "github.com/exagent-io/exagent/internal/secrets"
)

const chatAnswer = `{"id":"x","object":"chat.completion","created":1,"model":"m",
	"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}],
	"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// headerLog is a chat endpoint that records each request's headers.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) handler(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.seen = append(l.seen, r.Header.Clone())
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(chatAnswer))
}

func (l *headerLog) requests() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.seen...)
}

// loopbackTransport is an egress transport allowing 127.0.0.1 (a CA
// bundle needs the manager's egress transport).
func loopbackTransport(t *testing.T) *http.Client {
	t.Helper()
	allow, err := egress.ParseCIDRs("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	return egress.NewClient(egress.TransportOptions{Policy: egress.New(egress.Config{Allow: allow})})
}

func secrets(m map[string]string) SecretGetter {
	return func(_ context.Context, sel exagentv1.SecretKeySelector) (string, error) {
		v, ok := m[sel.Name+"/"+sel.Key]
		if !ok {
			return "", errors.New("secret " + sel.Name + " has no key " + sel.Key)
		}
		return v, nil
	}
}

func certPEM(srv *httptest.Server) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// TestModelHeaders: the Agent's headers arrive with their Secrets' values
// (a trailing newline of a Secret written from a file dropped); an Azure
// deployment keyed by api-key gets no Authorization.
func TestModelHeaders(t *testing.T) {
	log := &headerLog{}
	srv := httptest.NewServer(http.HandlerFunc(log.handler))
	defer srv.Close()
	spec := &exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: srv.URL,
		Headers: []exagentv1.SecretHeader{
			{Name: "api-key", ValueFrom: exagentv1.SecretKeySelector{Name: "azure", Key: "key"}},
			{Name: "x-tenant", ValueFrom: exagentv1.SecretKeySelector{Name: "gw", Key: "tenant"}},
		}}
	p, err := For(context.Background(), spec, secrets(map[string]string{"azure/key": "az-123", "gw/tenant": "team-a\n"}),
		Options{HTTPClient: loopbackOnly(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), oneMessage); err != nil {
		t.Fatal(err)
	}
	got := log.requests()
	if len(got) != 1 {
		t.Fatalf("requests = %d, want 1", len(got))
	}
	if v := got[0].Get("Api-Key"); v != "az-123" {
		t.Errorf("api-key = %q, want the Secret's value", v)
	}
	if v := got[0].Get("X-Tenant"); v != "team-a" {
		t.Errorf("x-tenant = %q, want team-a", v)
	}
	if v := got[0].Get("Authorization"); v != "" {
		t.Errorf("Authorization = %q, want none (no apiKeySecretRef)", v)
	}
}

// TestModelHeaderRefusals: a header the model cannot be asked with is a
// ConfigError naming the field, before any request.
func TestModelHeaderRefusals(t *testing.T) {
	cases := map[string]struct {
		header    exagentv1.SecretHeader
		value     string
		wantField string
	}{
		"a newline inside the value":   {exagentv1.SecretHeader{Name: "X-Tenant"}, "a\r\nEvil: 1", "spec.model.headers[0].valueFrom"},
		"a header the provider sets":   {exagentv1.SecretHeader{Name: "Content-Length"}, "1", "spec.model.headers[0].name"},
		"not a header name (older CR)": {exagentv1.SecretHeader{Name: "X Tenant"}, "1", "spec.model.headers[0].name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.header.ValueFrom = exagentv1.SecretKeySelector{Name: "s", Key: "k"}
			spec := &exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: "http://127.0.0.1:1",
				Headers: []exagentv1.SecretHeader{tc.header}}
			_, err := For(context.Background(), spec, secrets(map[string]string{"s/k": tc.value}), Options{HTTPClient: loopbackOnly(t)})
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.wantField || ce.Reason != exagentv1.ReasonInvalidConfiguration {
				t.Fatalf("err = %v, want a ConfigError on %s", err, tc.wantField)
			}
			if strings.Contains(err.Error(), "Evil") {
				t.Errorf("the message %q repeats the Secret's value", err)
			}
		})
	}
}

// TestModelCABundle: a CA bundle holding the endpoint's CA is trusted; one
// holding another CA is refused after one try with an UntrustedError that
// names the field; no bundle refuses a private CA too (the system's roots
// do not hold it); a bundle with no certificate is a ConfigError.
func TestModelCABundle(t *testing.T) {
	log := &headerLog{}
	srv := httptest.NewTLSServer(http.HandlerFunc(log.handler))
	defer srv.Close()
	// httptest's servers all share one certificate: another CA is made.
	otherCA, err := certs.GenerateServing(t.TempDir(), []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		bundle     string // "" for none
		wantErr    bool
		wantBundle bool
		wantConfig bool
	}{
		"the endpoint's CA":  {bundle: certPEM(srv)},
		"another CA":         {bundle: string(otherCA), wantErr: true, wantBundle: true},
		"no bundle":          {wantErr: true},
		"not a PEM bundle":   {bundle: "hello", wantErr: true, wantConfig: true},
		"the CA and another": {bundle: string(otherCA) + certPEM(srv)},
	}
	shared := loopbackTransport(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: srv.URL}
			vals := map[string]string{}
			if tc.bundle != "" {
				spec.CABundleSecretRef = &exagentv1.SecretKeySelector{Name: "ca", Key: "ca.crt"}
				vals["ca/ca.crt"] = tc.bundle
			}
			before := len(log.requests())
			p, err := For(context.Background(), spec, secrets(vals), Options{HTTPClient: shared})
			if err == nil {
				_, err = p.Complete(context.Background(), oneMessage)
			}
			var ce *ConfigError
			var ue *UntrustedError
			switch {
			case !tc.wantErr && err != nil:
				t.Fatalf("err = %v, want an answer", err)
			case !tc.wantErr:
				if n := len(log.requests()) - before; n != 1 {
					t.Errorf("requests = %d, want 1", n)
				}
			case tc.wantConfig:
				if !errors.As(err, &ce) || ce.Field != "spec.model.caBundleSecretRef" {
					t.Errorf("err = %v, want a ConfigError on spec.model.caBundleSecretRef", err)
				}
			case !errors.As(err, &ue) || ue.Bundle != tc.wantBundle:
				t.Errorf("err = %v, want an UntrustedError (bundle %v)", err, tc.wantBundle)
			case tc.wantBundle && !strings.Contains(err.Error(), "spec.model.caBundleSecretRef"):
				t.Errorf("err = %q, want it to name the field", err)
			case strings.Contains(err.Error(), "tries"):
				t.Errorf("err = %q: a refused certificate is not retried", err)
			}
		})
	}
}

// TestModelSecretErrors: a Secret the model needs, missing, without its
// key or not readable, is a ConfigError naming the field with the Agent
// check's reason; an apiserver that did not answer is not (retried).
func TestModelSecretErrors(t *testing.T) {
	gr := schema.GroupResource{Resource: "secrets"}
	cases := map[string]struct {
		err        error
		wantReason string
	}{
		"missing":      {fmt.Errorf("secret ns/k: %w", apierrors.NewNotFound(gr, "k")), exagentv1.ReasonSecretNotFound},
		"no such key":  {&secretread.KeyNotFoundError{Namespace: "ns", Name: "k", Key: "apiKey"}, exagentv1.ReasonSecretKeyNotFound},
		"forbidden":    {apierrors.NewForbidden(gr, "k", errors.New("no")), exagentv1.ReasonSecretNotReadable},
		"not answered": {apierrors.NewServiceUnavailable("later"), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &exagentv1.ModelSpec{Provider: exagentv1.ModelProviderAnthropic, Name: "m",
				APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "k", Key: "apiKey"}}
			_, err := For(context.Background(), spec, func(context.Context, exagentv1.SecretKeySelector) (string, error) { return "", tc.err }, Options{})
			var ce *ConfigError
			switch {
			case tc.wantReason == "" && errors.As(err, &ce):
				t.Errorf("err = %v: a transient failure is not a ConfigError", err)
			case tc.wantReason != "" && (!errors.As(err, &ce) || ce.Reason != tc.wantReason || ce.Field != "spec.model.apiKeySecretRef"):
				t.Errorf("err = %v, want a ConfigError %s on spec.model.apiKeySecretRef", err, tc.wantReason)
			}
		})
	}
}
