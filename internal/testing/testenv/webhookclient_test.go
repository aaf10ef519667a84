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

package testenv_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/webhook"
)

// TestApiserverPresentsWebhookClientCert: the test environment's apiserver
// calls the webhooks with its client certificate, so a webhook server that
// requires one (--webhook-client-ca) still admits a run created through the
// apiserver; a caller without it — a plain HTTPS POST of an AdmissionReview
// claiming to be alice — is refused (403) and never reaches a handler.
func TestApiserverPresentsWebhookClientCert(t *testing.T) {
	env, err := testenv.Start(testenv.Options{WithWebhooks: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	opts, err := env.WebhookServerOptions()
	if err != nil {
		t.Fatal(err)
	}
	srv := webhook.GateClientCerts(crwebhook.NewServer(opts))
	var (
		mu   sync.Mutex
		seen []string // the users of the reviews the handlers answered
	)
	allow := &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		mu.Lock()
		seen = append(seen, req.UserInfo.Username)
		mu.Unlock()
		return admission.Allowed("")
	})}
	for _, path := range []string{"/mutate-exagent-io-v1alpha1-agentrun", "/validate-exagent-io-v1alpha1-agentrun"} {
		srv.Register(path, allow)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return srv.StartedChecker()(nil) == nil, nil }); err != nil {
		t.Fatalf("the webhook server did not start: %v", err)
	}
	users := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }

	// The apiserver reaches the webhooks: the run is admitted through both.
	run := fixture.MakeRun("r1", "default").Agent("a").Input("hello").Obj()
	if err := env.Client.Create(ctx, run); err != nil {
		t.Fatalf("creating a run through the webhooks that require the apiserver's client certificate: %v", err)
	}
	if got := users(); len(got) != 2 || got[0] == "" {
		t.Fatalf("the webhooks answered reviews of %q, want the mutating and the validating review of the run's creator", got)
	}

	// A forged review from anyone else who reaches the port.
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "forged",
			Kind:      metav1.GroupVersionKind{Group: "exagent.io", Version: "v1alpha1", Kind: "AgentRun"},
			Resource:  metav1.GroupVersionResource{Group: "exagent.io", Version: "v1alpha1", Resource: "agentruns"},
			Namespace: "default", Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "alice"},
		},
	}
	if review.Request.Object.Raw, err = json.Marshal(run); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	// The caller trusts the webhook's serving certificate: only the
	// webhook's demand for a client certificate can stop it.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(env.WebhookInstallOptions.LocalServingCAData)
	url := "https://" + net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)) + "/mutate-exagent-io-v1alpha1-agentrun"
	post := func(certs ...tls.Certificate) (int, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12},
		}}
		defer c.CloseIdleConnections()
		resp, err := c.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := post(); err != nil || code != http.StatusForbidden {
		t.Fatalf("a forged review without a client certificate: HTTP %d, error %v; want 403 (only /convert answers a caller without one)", code, err)
	}
	if got := users(); len(got) != 2 {
		t.Fatalf("a forged review reached a handler: users %q", got)
	}
	// Only the CA matters: a certificate it signs is answered, which is
	// why it must sign nothing but the apiserver's (docs/install.md).
	pair, err := env.WebhookClient.Issue("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	if code, err := post(pair); err != nil || code != http.StatusOK {
		t.Fatalf("a review with a certificate of the client CA: HTTP %d, error %v; want answered", code, err)
	}
	if got := users(); len(got) != 3 || got[2] != "alice" {
		t.Fatalf("users %q, want the review with a certificate of the client CA answered last", got)
	}
}
