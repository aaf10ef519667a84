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

package controllers_test

import (
	"encoding/pem"
	"net/http/httptest"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/certs"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestModelEndpoint runs the OpenAI provider against endpoints that need
// more than a Bearer key: headers from Secrets (an Azure api-key, a
// gateway's tenant), and a gateway behind a private CA.
func TestModelEndpoint(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	sel := func(name, key string) exagentv1.SecretKeySelector {
		return exagentv1.SecretKeySelector{Name: name, Key: key}
	}

	t.Run("headers from Secrets arrive; a header renamed while the run waits is a changed model", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		ts := newToolServer(t)
		cs := newChatServer(t)
		h.putSecret("azure", map[string]string{"key": "az-123"})
		h.putSecret("gw", map[string]string{"tenant": "team-a"})
		h.createAgent("hdr", exagentv1.AgentSpec{
			Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: cs.srv.URL + "/v1",
				Headers: []exagentv1.SecretHeader{{Name: "api-key", ValueFrom: sel("azure", "key")}, {Name: "X-Tenant", ValueFrom: sel("gw", "tenant")}}},
			Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
			Policy: fixture.AskPolicy("refund"),
		})
		h.createRun("hdr", "hdr")
		paused := h.waitPhase("hdr", exagentv1.PhaseAwaitingApproval)
		reqs := cs.requests()
		if len(reqs) != 1 {
			t.Fatalf("model requests = %d, want 1", len(reqs))
		}
		if got := reqs[0].Header; got.Get("Api-Key") != "az-123" || got.Get("X-Tenant") != "team-a" || got.Get("Authorization") != "" {
			t.Errorf("headers api-key=%q x-tenant=%q authorization=%q; want the Secrets' values and no Authorization",
				got.Get("Api-Key"), got.Get("X-Tenant"), got.Get("Authorization"))
		}
		h.updateAgent("hdr", func(a *exagentv1.AgentSpec) { a.Model.Headers[1].Name = "X-Team" })
		h.approve(paused, "ok")
		run := h.waitRun("hdr", "Ready=False DefinitionChanged", readyReason(exagentv1.ReasonDefinitionChanged))
		if run.Status.Phase != exagentv1.PhaseApproved || run.Status.Claim != nil {
			t.Errorf("phase %s claim %+v, want Approved and unclaimed", run.Status.Phase, run.Status.Claim)
		}
		if n := len(cs.requests()); n != 1 {
			t.Errorf("model requests = %d, want still 1: the renamed header is another model", n)
		}
		if n := len(ts.journal()); n != 0 {
			t.Errorf("effects = %d, want 0", n)
		}
	})

	t.Run("a gateway behind a private CA: its CA trusted, another refused", func(t *testing.T) {
		h := &harness{t: t, ns: h.ns, c: h.c}
		cs := startChatServer(t, httptest.NewTLSServer)
		other, err := certs.GenerateServing(t.TempDir(), []string{"127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		h.putSecret("gw-ca", map[string]string{
			"ca.crt":    string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cs.srv.Certificate().Raw})),
			"other.crt": string(other),
		})
		agent := func(name, key string) {
			h.createAgent(name, exagentv1.AgentSpec{
				Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "gpt-test", BaseURL: cs.srv.URL + "/v1",
					CABundleSecretRef: new(sel("gw-ca", key))},
				Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", newToolServer(t).url("/refund"))},
				Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
			})
		}
		agent("trusted", "ca.crt")
		agent("untrusted", "other.crt")
		h.createRun("trusted", "trusted")
		h.createRun("untrusted", "untrusted")
		if run := h.waitPhase("trusted", exagentv1.PhaseSucceeded); run.Status.Ledger.Requests != 2 {
			t.Errorf("trusted: %d model requests, want 2", run.Status.Ledger.Requests)
		}
		run := h.waitPhase("untrusted", exagentv1.PhaseFailed)
		if run.Status.Reason != exagentv1.ReasonModelCertificateUntrusted || !strings.Contains(run.Status.Message, "spec.model.caBundleSecretRef") {
			t.Errorf("untrusted: %s %q, want ModelCertificateUntrusted naming the field", run.Status.Reason, run.Status.Message)
		}
		if run.Status.Ledger.Requests != 1 {
			t.Errorf("untrusted: %d model requests charged, want 1 (a refused certificate is not re-sent)", run.Status.Ledger.Requests)
		}
		if n := len(cs.requests()); n != 2 {
			t.Errorf("the endpoint answered %d requests, want the trusted run's 2", n)
		}
	})
}
