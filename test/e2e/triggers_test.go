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

package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const e2eSigningSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// triggerClient calls the manager's trigger listener over TLS, trusting
// only the webhook's CA (the listener serves the webhook's certificate).
func triggerClient(t *testing.T) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.dir, "webhook", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the webhook CA has no certificate")
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// deliver POSTs body to the trigger ns/name and returns the status and answer.
func deliver(t *testing.T, c *http.Client, ns, name string, body []byte, hdr http.Header) (int, map[string]any) {
	t.Helper()
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.triggerPort)) + "/triggers/" + ns + "/" + name
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var answer map[string]any
	_ = json.Unmarshal(b, &answer)
	return resp.StatusCode, answer
}

// signed are the Standard Webhooks headers of body under id, now.
func signed(t *testing.T, id string, body []byte) http.Header {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(e2eSigningSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sig, err := wh.Sign(id, now, body)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)},
		"Webhook-Signature": {sig}, "Content-Type": {"application/json"}}
}

func triggerRunNames(t *testing.T, ns, trigger string) []string {
	t.Helper()
	out := must(t, "", "", "get", "agentruns", "-n", ns, "-l", exagentv1.LabelTrigger+"="+trigger, "-o", "name")
	return strings.Fields(out)
}

// TestTriggers: the manager's trigger listener, over TLS, as a sender and
// Alertmanager would call it. dave, an editor and approver, applies an
// Agent (forbidSelfApproval) and two triggers; a signed delivery makes
// one run, requested by dave — who may therefore not approve its call,
// while alice may; a wrong signature (401), an oversized body (413) and a
// replayed delivery id (409) make nothing. An Alertmanager notification of
// 1,000 firing alerts over 3 fingerprints, sent twice, makes exactly 3
// runs. The triggers' status counts what they saw.
func TestTriggers(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-triggers")
	bindApprovers(t, ns)
	must(t, "", "", "create", "rolebinding", "dave-edits", "-n", ns, "--clusterrole=exagent-editor", "--user=dave")
	must(t, "", "", "create", "rolebinding", "dave-approves", "-n", ns, "--clusterrole=exagent-approver", "--user=dave")
	must(t, "", "", "create", "secret", "generic", "hooks", "-n", ns, "--from-literal=signing="+e2eSigningSecret, "--from-literal=token=am-token")
	effects := newEffectServer(t, false)
	refunds := chargeAgent(ns, "refunds", effects.URL, "    - {name: charges, tools: [charge], action: Ask}\n    forbidSelfApproval: true\n",
		chargeCall("c1", 300))
	must(t, "dave", refunds+`---
apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: triage, namespace: `+ns+`}
spec:
  model:
    provider: Scripted
    script:
    - text: triaged
---
apiVersion: exagent.io/v1alpha1
kind: AgentTrigger
metadata: {name: refund-requests, namespace: `+ns+`}
spec:
  source:
    webhook:
      auth:
        signingSecretRef: {name: hooks, key: signing}
  runTemplate:
    agentRef: {name: refunds}
    input: "Refund the customer of this ticket:"
  input: '"ticket " + string(event.id) + ": " + event.title'
  dedupKey: string(event.id)
---
apiVersion: exagent.io/v1alpha1
kind: AgentTrigger
metadata: {name: alerts, namespace: `+ns+`}
spec:
  source:
    alertmanager:
      auth:
        bearerTokenSecretRef: {name: hooks, key: token}
  runTemplate:
    agentRef: {name: triage}
    input: "Triage:"
  input: 'event.labels.alertname + " on " + event.labels.pod'
  dedupWindow: 30m
`, "apply", "-f", "-")
	for _, name := range []string{"refund-requests", "alerts"} {
		must(t, "", "", "wait", "--for=condition=Ready", "agenttrigger/"+name, "-n", ns, "--timeout="+waitTimeout)
	}
	c := triggerClient(t)

	body := []byte(`{"id":4711,"title":"double charge"}`)
	code, answer := deliver(t, c, ns, "refund-requests", body, signed(t, "msg_1", body))
	if code != http.StatusCreated {
		t.Fatalf("a signed delivery: %d %v", code, answer)
	}
	runs := triggerRunNames(t, ns, "refund-requests")
	if len(runs) != 1 {
		t.Fatalf("runs %v, want one", runs)
	}
	run := strings.TrimPrefix(runs[0], "agentrun.exagent.io/")

	wrong := signed(t, "msg_2", body)
	wrong.Set("Webhook-Signature", "v1,"+strings.Repeat("A", 43)+"=")
	if code, _ := deliver(t, c, ns, "refund-requests", body, wrong); code != http.StatusUnauthorized {
		t.Errorf("a wrong signature: %d, want 401", code)
	}
	big := []byte(`{"id":1,"title":"` + strings.Repeat("x", 70<<10) + `"}`)
	if code, _ := deliver(t, c, ns, "refund-requests", big, signed(t, "msg_3", big)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 70 KiB body: %d, want 413", code)
	}
	other := []byte(`{"id":4712,"title":"another"}`)
	if code, _ := deliver(t, c, ns, "refund-requests", other, signed(t, "msg_1", other)); code != http.StatusConflict {
		t.Errorf("a replayed delivery id: %d, want 409", code)
	}
	if got := triggerRunNames(t, ns, "refund-requests"); len(got) != 1 {
		t.Errorf("runs after the refused deliveries %v, want still one", got)
	}

	paused := waitPaused(t, ns, run)
	if paused.Spec.RequestedBy == nil || paused.Spec.RequestedBy.Username != "dave" {
		t.Fatalf("the triggered run is requested by %+v, want dave (who set the trigger)", paused.Spec.RequestedBy)
	}
	if !strings.HasPrefix(paused.Spec.Input, "Refund the customer of this ticket:\n\nticket 4711: double charge") {
		t.Errorf("input %q", paused.Spec.Input)
	}
	wantStderr(t, mustFail(t, "dave", "approve", run, "-n", ns), "forbidSelfApproval", `"dave" requested this run`)
	must(t, "alice", "", "approve", run, "-n", ns)
	if done := waitDone(t, ns, run); done.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s", done.Status.Phase, done.Status.Message)
	}
	if got := effects.received(); len(got) != 1 {
		t.Errorf("the charge was made %d times, want once", len(got))
	}

	var alerts []map[string]any
	for i := range 1000 {
		alerts = append(alerts, map[string]any{"status": "firing", "fingerprint": fmt.Sprint("fp", i%3),
			"labels": map[string]string{"alertname": "CrashLooping", "pod": fmt.Sprint("web-", i%3)}})
	}
	storm, _ := json.Marshal(map[string]any{"version": "4", "status": "firing", "receiver": "exagent", "alerts": alerts})
	auth := http.Header{"Authorization": {"Bearer am-token"}, "Content-Type": {"application/json"}}
	for i := range 2 {
		if code, answer := deliver(t, c, ns, "alerts", storm, auth); code != http.StatusCreated && code != http.StatusOK {
			t.Fatalf("storm %d: %d %v", i, code, answer)
		}
	}
	if got := triggerRunNames(t, ns, "alerts"); len(got) != 3 {
		t.Errorf("runs of 2 storms of 1,000 alerts over 3 fingerprints: %v, want 3", got)
	}

	// The counts reach the status within the listener's flush interval: a
	// notification's alerts are one event per fingerprint, so the storms
	// were 6 events, 3 runs and 3 duplicates.
	eventually(t, time.Minute, "the alert trigger's counts", func() bool {
		out := must(t, "", "", "get", "agenttrigger", "alerts", "-n", ns, "-o", "jsonpath={.status.counts.runs}/{.status.counts.duplicates}")
		return out == "3/3"
	})
	table := must(t, "", "", "get", "agenttriggers", "-n", ns)
	for _, want := range []string{"READY", "ACTIVE", "RUNS", "DROPPED", "alerts", "refund-requests"} {
		if !strings.Contains(table, want) {
			t.Errorf("kubectl get agenttriggers lacks %q:\n%s", want, table)
		}
	}
}
