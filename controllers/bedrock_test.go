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
	"net/http"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/testing/bedrocktest"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestBedrockToolLoop runs the Bedrock provider through the controller
// against our Converse server (the Agent's baseURL is the endpoint
// override): no key in the Agent, the manager's credentials from the AWS
// default chain (here its environment), every request SigV4-signed for
// the Agent's region; a tool round trip, and the usage in the ledger.
func TestBedrockToolLoop(t *testing.T) {
	// The default chain is read once per region and process: a region no
	// other test uses, and nothing from this host's AWS files.
	const region = "ap-south-2"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENVTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envtest-secret")
	t.Setenv("AWS_SESSION_TOKEN", "envtest-session")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	h := newHarness(t)
	ts := newToolServer(t)
	ts.respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte(`{"refunded":7}`)) }
	srv := bedrocktest.Start(region, func(r *bedrocktest.Request) bedrocktest.Reply {
		last := r.Messages[len(r.Messages)-1]
		if b := last.Content[len(last.Content)-1]; b.ToolResult != nil {
			return bedrocktest.Reply{Text: "refund done: " + b.ToolResult.Content[0].Text, Input: 40, Output: 6}
		}
		return bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{ID: "tooluse_1", Name: "refund", Input: map[string]any{"amount": 7}}}, Input: 30, Output: 9}
	})
	t.Cleanup(srv.Close)
	// The Agent names Bedrock's regional endpoint, the only kind the
	// provider accepts; the manager's client stands in for AWS's DNS and
	// sends it to our server (every other request, under the egress policy).
	hc := egress.NewClient(egress.TransportOptions{Policy: testEgress})
	hc.Transport = srv.Transport(hc.Transport)
	h.startManager(controllers.Options{HTTPClient: hc})
	h.createAgent("bedrock", exagentv1.AgentSpec{
		Instructions: "You refund customers.",
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderBedrock, Name: "anthropic.claude-test-v1:0",
			Region: region, BaseURL: srv.Endpoint()},
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("refund", ts.url("/refund"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createRun("r", "bedrock")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if done.Status.Output != `refund done: {"refunded":7}` || done.Status.Calls[0].ID != "tooluse_1" {
		t.Errorf("output %q, call %q; want the refund's result and the toolUse id", done.Status.Output, done.Status.Calls[0].ID)
	}
	if l := done.Status.Ledger; l.Requests != 2 || l.PromptTokens != 70 || l.CompletionTokens != 15 {
		t.Errorf("ledger %+v, want 2 requests, 70 prompt and 15 completion tokens", l)
	}
	for i, r := range srv.Requests() {
		if a := r.Header.Get("Authorization"); !strings.Contains(a, "Credential=AKIDENVTEST/") || r.Header.Get("X-Amz-Security-Token") != "envtest-session" {
			t.Errorf("request %d: Authorization %q, want SigV4 with the environment's credentials", i, a)
		}
	}
}
