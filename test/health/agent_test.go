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

package health

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// agentSample is an Agent in one state of its check, its conditions the
// Agent controller's own (controllers.AgentConditions).
type agentSample struct {
	name string
	// generation of the Agent; observed is the generation its status was
	// checked at (0: served with the CRD's default, never checked).
	generation, observed int64
	// ready is the Ready condition's status ("": no conditions).
	ready       metav1.ConditionStatus
	reason, msg string
	wantArgo    string
	wantKstatus status.Status
	wantFlux    status.Status
}

var agentSamples = []agentSample{
	{name: "NotChecked", generation: 1, wantArgo: "Progressing", wantKstatus: status.InProgressStatus, wantFlux: status.InProgressStatus},
	{name: "Checking", generation: 1, observed: 1, ready: metav1.ConditionUnknown, reason: exagentv1.ReasonChecking,
		msg: `checking tool "srv": tools/list of https://mcp.example`, wantArgo: "Progressing", wantKstatus: status.InProgressStatus, wantFlux: status.InProgressStatus},
	{name: "Ready", generation: 1, observed: 1, ready: metav1.ConditionTrue, reason: exagentv1.ReasonAgentReady,
		msg: "every check passed (2 tools)", wantArgo: "Healthy", wantKstatus: status.CurrentStatus, wantFlux: status.CurrentStatus},
	{name: "NotReady", generation: 1, observed: 1, ready: metav1.ConditionFalse, reason: exagentv1.ReasonSecretKeyNotFound,
		msg:      `tool "notify": header Authorization: Secret "hook" in namespace "ops" has no key "token"`,
		wantArgo: "Degraded", wantKstatus: status.FailedStatus, wantFlux: status.FailedStatus},
	{name: "ReadyButSpecChanged", generation: 2, observed: 1, ready: metav1.ConditionTrue, reason: exagentv1.ReasonAgentReady,
		msg: "every check passed (2 tools)", wantArgo: "Progressing", wantKstatus: status.InProgressStatus, wantFlux: status.InProgressStatus},
}

// object is the sample Agent as the apiserver would serve it.
func (s agentSample) object(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	a := &exagentv1.Agent{
		TypeMeta:   metav1.TypeMeta{APIVersion: exagentv1.GroupVersion.String(), Kind: "Agent"},
		ObjectMeta: metav1.ObjectMeta{Name: "triage", Namespace: "ops", Generation: s.generation},
		Spec:       exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("ok"))},
		Status:     exagentv1.AgentStatus{ObservedGeneration: s.observed},
	}
	if s.ready != "" {
		a.Status.Conditions = controllers.AgentConditions(metav1.Condition{Type: exagentv1.ConditionReady, Status: s.ready,
			Reason: s.reason, Message: s.msg, ObservedGeneration: s.observed,
			LastTransitionTime: metav1.NewTime(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))})
	}
	return served(t, a, s.observed == 0)
}

// served is obj through JSON, as a client decodes it; unchecked, its
// status is the CRD's default alone.
func served(t *testing.T, obj runtime.Object, unchecked bool) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if unchecked {
		m["status"] = map[string]any{"observedGeneration": int64(0)}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

func readScript(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "argocd", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAgentKstatus(t *testing.T) {
	for _, s := range agentSamples {
		t.Run(s.name, func(t *testing.T) {
			res, err := status.Compute(s.object(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != s.wantKstatus {
				t.Errorf("kstatus = %s (%s), want %s", res.Status, res.Message, s.wantKstatus)
			}
		})
	}
}

func TestAgentArgoCDHealthLua(t *testing.T) {
	script := readScript(t, "health-agent.lua")
	for _, s := range agentSamples {
		t.Run(s.name, func(t *testing.T) {
			st, msg := runHealthLua(t, script, s.object(t).Object)
			if st != s.wantArgo {
				t.Errorf("health = %s (%s), want %s", st, msg, s.wantArgo)
			}
			if st != "Progressing" && (!strings.Contains(msg, s.reason) || !strings.Contains(msg, s.msg)) {
				t.Errorf("message %q should carry the reason %s and what to fix", msg, s.reason)
			}
		})
	}
}

func TestAgentFluxHealthCheckExprs(t *testing.T) {
	e, ok := fluxExprs(t)["Agent"]
	if !ok {
		t.Fatal("no Agent entry")
	}
	for _, s := range agentSamples {
		t.Run(s.name, func(t *testing.T) {
			got, err := fluxEvaluate(e, s.object(t).Object)
			if err != nil {
				t.Fatal(err)
			}
			if got != s.wantFlux {
				t.Errorf("flux = %s, want %s", got, s.wantFlux)
			}
		})
	}
}

// TestApprovalDecisionArgoCDHealthLua: Applied is Healthy, Rejected
// Degraded with the controller's reason, a decision not applied yet
// Progressing.
func TestApprovalDecisionArgoCDHealthLua(t *testing.T) {
	script := readScript(t, "health-approvaldecision.lua")
	for _, tc := range []struct {
		phase      exagentv1.DecisionPhase
		message    string
		want, text string
	}{
		{want: "Progressing"},
		{phase: exagentv1.DecisionApplied, message: "approved a-1 of run triage-42", want: "Healthy", text: "Applied: approved a-1"},
		{phase: exagentv1.DecisionRejected, message: "revision 1 is stale: the run is at revision 2", want: "Degraded", text: "Rejected: revision 1 is stale"},
	} {
		name := string(tc.phase)
		if name == "" {
			name = "NotApplied"
		}
		t.Run(name, func(t *testing.T) {
			d := &exagentv1.ApprovalDecision{
				TypeMeta:   metav1.TypeMeta{APIVersion: exagentv1.GroupVersion.String(), Kind: "ApprovalDecision"},
				ObjectMeta: metav1.ObjectMeta{Name: "triage-42-ok", Namespace: "ops", Generation: 1},
				Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: "triage-42"}, Decision: exagentv1.DecisionApprove,
					ApprovalID: "a-1", Revision: 1, PayloadHash: "sha256:00"},
				Status: exagentv1.ApprovalDecisionStatus{Phase: tc.phase, Message: tc.message},
			}
			st, msg := runHealthLua(t, script, served(t, d, false).Object)
			if st != tc.want || !strings.Contains(msg, tc.text) {
				t.Errorf("health = %s (%q), want %s with %q", st, msg, tc.want, tc.text)
			}
		})
	}
}
