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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/triggers"
)

const triggerSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// replica is one manager's trigger listener against the test's apiserver.
func (h *harness) replica() *httptest.Server {
	runs := &controllers.TriggerRuns{Client: h.c, APIReader: h.c}
	srv := httptest.NewServer(&triggers.Handler{Lookup: runs, Creator: runs})
	h.t.Cleanup(srv.Close)
	return srv
}

func postTo(t *testing.T, srv *httptest.Server, path string, body []byte, hdr http.Header) (int, triggers.Result) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var res triggers.Result
	_ = json.Unmarshal(b, &res)
	return resp.StatusCode, res
}

// setBy writes the setter admission would stamp (no webhooks here).
func setBy(at *exagentv1.AgentTrigger, user string) {
	by, _ := json.Marshal(exagentv1.Actor{Username: user})
	if at.Annotations == nil {
		at.Annotations = map[string]string{}
	}
	at.Annotations[exagentv1.AnnotationSpecSetBy] = string(by)
}

func (h *harness) triggerRuns(name string) []exagentv1.AgentRun {
	h.t.Helper()
	var list exagentv1.AgentRunList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns), client.MatchingLabels{exagentv1.LabelTrigger: name}); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// TestTriggerRuns: against the apiserver, a signed webhook delivery makes
// one run of the trigger's Agent (labelled, owned by the trigger, its
// input the template's then the event's rendering), which the manager
// runs; the same delivery at a second replica — which has seen nothing —
// finds that run by name and makes none; an Alertmanager storm of 1,000
// alerts over 3 fingerprints, sent to both replicas, makes 3 runs.
func TestTriggerRuns(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	h.createAgent("triage", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("triaged"))})
	if err := h.c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hooks", Namespace: h.ns},
		StringData: map[string]string{"signing": triggerSecret, "token": "am-token"}}); err != nil {
		t.Fatal(err)
	}
	tmpl := exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "triage"}, Input: "Triage this:"}
	for _, at := range []*exagentv1.AgentTrigger{
		{ObjectMeta: metav1.ObjectMeta{Name: "tickets", Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
			Source: &exagentv1.TriggerSource{Webhook: &exagentv1.WebhookTriggerSource{Auth: &exagentv1.TriggerAuth{
				SigningSecretRef: &exagentv1.SecretKeySelector{Name: "hooks", Key: "signing"}}}},
			RunTemplate: tmpl, Input: `"ticket " + string(event.id) + ": " + event.title`, DedupKey: "string(event.id)"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "alerts", Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
			Source: &exagentv1.TriggerSource{Alertmanager: &exagentv1.AlertmanagerTriggerSource{Auth: &exagentv1.TriggerAuth{
				BearerTokenSecretRef: &exagentv1.SecretKeySelector{Name: "hooks", Key: "token"}}}},
			RunTemplate: tmpl, Input: `event.labels.alertname + " on " + event.labels.pod`}},
	} {
		setBy(at, "dave")
		if err := h.c.Create(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
	a, b := h.replica(), h.replica()

	body := []byte(`{"id":42,"title":"checkout is slow"}`)
	wh, _ := standardwebhooks.NewWebhook(triggerSecret)
	now := time.Now()
	sig, _ := wh.Sign("msg_1", now, body)
	hdr := http.Header{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)}, "Webhook-Signature": {sig}}
	path := "/triggers/" + h.ns + "/tickets"
	if code, res := postTo(t, a, path, body, hdr); code != http.StatusCreated || len(res.Runs) != 1 {
		t.Fatalf("a signed delivery: %d %+v", code, res)
	}
	if code, res := postTo(t, b, path, body, hdr); code != http.StatusOK || res.Duplicates != 1 {
		t.Errorf("the same delivery at a second replica: %d %+v, want a duplicate", code, res)
	}
	runs := h.triggerRuns("tickets")
	if len(runs) != 1 {
		t.Fatalf("%d runs of the ticket trigger, want 1", len(runs))
	}
	run := runs[0]
	if run.Spec.Input != "Triage this:\n\nticket 42: checkout is slow" || len(run.OwnerReferences) != 1 || run.OwnerReferences[0].Name != "tickets" {
		t.Errorf("the run: input %q, owners %+v", run.Spec.Input, run.OwnerReferences)
	}
	if run.Spec.RequestedBy == nil || run.Spec.RequestedBy.Username != "dave" {
		t.Errorf("the run is requested by %+v, want the trigger's setter dave", run.Spec.RequestedBy)
	}
	h.waitPhase(run.Name, exagentv1.PhaseSucceeded)

	var alerts []map[string]any
	for i := range 1000 {
		alerts = append(alerts, map[string]any{"status": "firing", "fingerprint": fmt.Sprint("fp", i%3),
			"labels": map[string]string{"alertname": "CrashLooping", "pod": fmt.Sprint("web-", i%3)}})
	}
	storm, _ := json.Marshal(map[string]any{"version": "4", "status": "firing", "alerts": alerts})
	auth := http.Header{"Authorization": {"Bearer am-token"}}
	for _, srv := range []*httptest.Server{a, b, a} {
		if code, _ := postTo(t, srv, "/triggers/"+h.ns+"/alerts", storm, auth); code != http.StatusCreated && code != http.StatusOK {
			t.Fatalf("the storm: %d", code)
		}
	}
	got := h.triggerRuns("alerts")
	if len(got) != 3 {
		t.Fatalf("%d runs from 3 storms of 1,000 alerts over 3 fingerprints at two replicas, want 3", len(got))
	}
	for _, r := range got {
		if !strings.HasPrefix(r.Spec.Input, "Triage this:\n\nCrashLooping on web-") {
			t.Errorf("alert run input %q", r.Spec.Input)
		}
	}
	if code, _ := postTo(t, a, "/triggers/"+h.ns+"/alerts", storm, http.Header{"Authorization": {"Bearer nope"}}); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
}
