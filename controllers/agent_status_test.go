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

package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

var agentT0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func condOf(st exagentv1.AgentStatus, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// TestAgentStatus: Ready follows the findings (a problem: False with the
// first problem's reason; something under way: Unknown; else True), the
// kstatus conditions follow Ready, observedGeneration is the generation
// checked, and the transition time stays while the status does.
func TestAgentStatus(t *testing.T) {
	secret := agentProblem{where: "model (apiKeySecretRef)", reason: exagentv1.ReasonSecretNotFound, message: `Secret "k" does not exist`}
	schema := agentProblem{where: `tool "pay"`, reason: exagentv1.ReasonInvalidSchema, message: "parameters: at /type: bad"}
	okTool := exagentv1.AgentToolStatus{Name: "pay", Kind: "http", Ready: true}
	tests := map[string]struct {
		found                  agentFindings
		wantReady              metav1.ConditionStatus
		wantReason             string
		wantMessage            string
		wantReconciling, stall metav1.ConditionStatus
	}{
		"every check passed": {found: agentFindings{generation: 2, tools: []exagentv1.AgentToolStatus{okTool}},
			wantReady: metav1.ConditionTrue, wantReason: exagentv1.ReasonAgentReady, wantMessage: "every check passed (1 tool)",
			wantReconciling: metav1.ConditionFalse, stall: metav1.ConditionFalse},
		"the first problem's reason, every problem in the message": {found: agentFindings{generation: 2, problems: []agentProblem{secret, schema}},
			wantReady: metav1.ConditionFalse, wantReason: exagentv1.ReasonSecretNotFound,
			wantMessage:     `model (apiKeySecretRef): Secret "k" does not exist; tool "pay": parameters: at /type: bad`,
			wantReconciling: metav1.ConditionFalse, stall: metav1.ConditionTrue},
		"a listing under way": {found: agentFindings{generation: 2, checking: []string{`tool "srv": tools/list of http://mcp`}},
			wantReady: metav1.ConditionUnknown, wantReason: exagentv1.ReasonChecking, wantMessage: `checking tool "srv": tools/list of http://mcp`,
			wantReconciling: metav1.ConditionTrue, stall: metav1.ConditionFalse},
		"a problem wins over a check under way": {found: agentFindings{generation: 2, problems: []agentProblem{schema}, checking: []string{"x"}},
			wantReady: metav1.ConditionFalse, wantReason: exagentv1.ReasonInvalidSchema, wantMessage: `tool "pay": parameters: at /type: bad`,
			wantReconciling: metav1.ConditionFalse, stall: metav1.ConditionTrue},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := agentStatus(exagentv1.AgentStatus{}, tc.found, agentT0)
			ready := condOf(st, exagentv1.ConditionReady)
			if ready.Status != tc.wantReady || ready.Reason != tc.wantReason || ready.Message != tc.wantMessage || ready.ObservedGeneration != 2 {
				t.Errorf("Ready = %s %s %q (generation %d), want %s %s %q (2)", ready.Status, ready.Reason, ready.Message,
					ready.ObservedGeneration, tc.wantReady, tc.wantReason, tc.wantMessage)
			}
			if st.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %d, want 2", st.ObservedGeneration)
			}
			if r, s := condOf(st, exagentv1.ConditionReconciling), condOf(st, exagentv1.ConditionStalled); r.Status != tc.wantReconciling || s.Status != tc.stall {
				t.Errorf("Reconciling %s, Stalled %s; want %s, %s", r.Status, s.Status, tc.wantReconciling, tc.stall)
			}
			// The same findings later change nothing: no write.
			again := agentStatus(st, tc.found, agentT0.Add(time.Hour))
			if agentStatusChanged(st, again) {
				t.Errorf("the same findings an hour later changed the status:\n%s", cmp.Diff(st, again))
			}
		})
	}
}

// TestAgentStatusTransitions: a reason or message that changes is a write
// that keeps the transition time; a status that changes moves it.
func TestAgentStatusTransitions(t *testing.T) {
	bad := func(reason string) agentFindings {
		return agentFindings{generation: 1, problems: []agentProblem{{where: "w", reason: reason, message: "m"}}}
	}
	first := agentStatus(exagentv1.AgentStatus{}, bad(exagentv1.ReasonSecretNotFound), agentT0)
	other := agentStatus(first, bad(exagentv1.ReasonSecretKeyNotFound), agentT0.Add(time.Minute))
	if !agentStatusChanged(first, other) {
		t.Fatal("a new reason is not a change")
	}
	if got := condOf(other, exagentv1.ConditionReady).LastTransitionTime.Time; !got.Equal(agentT0) {
		t.Errorf("transition time %s, want %s (still False)", got, agentT0)
	}
	fixed := agentStatus(other, agentFindings{generation: 1}, agentT0.Add(2*time.Minute))
	if got := condOf(fixed, exagentv1.ConditionReady); got.Status != metav1.ConditionTrue || !got.LastTransitionTime.Time.Equal(agentT0.Add(2*time.Minute)) {
		t.Errorf("fixed: Ready %s at %s, want True at +2m", got.Status, got.LastTransitionTime)
	}
	newer := agentStatus(fixed, agentFindings{generation: 2}, agentT0.Add(3*time.Minute))
	if !agentStatusChanged(fixed, newer) || condOf(newer, exagentv1.ConditionReady).ObservedGeneration != 2 {
		t.Errorf("a new generation checked is a change (observedGeneration)")
	}
}

// TestAgentStatusBounded: what an author controls never grows the status
// past its bounds — the tools listed, each message, the Ready message.
func TestAgentStatusBounded(t *testing.T) {
	var f agentFindings
	long := strings.Repeat("é", exagentv1.MaxAgentStatusMessage) // 2 bytes each
	for i := range exagentv1.MaxAgentTools + 10 {
		f.tools = append(f.tools, exagentv1.AgentToolStatus{Name: fmt.Sprintf("t%d", i), Kind: "http", Reason: exagentv1.ReasonSecretNotFound, Message: long})
		f.problems = append(f.problems, agentProblem{where: fmt.Sprintf("tool %q", fmt.Sprintf("t%d", i)), reason: exagentv1.ReasonSecretNotFound, message: "x\xff" + long})
	}
	st := agentStatus(exagentv1.AgentStatus{}, f, agentT0)
	if len(st.Tools) != exagentv1.MaxAgentTools {
		t.Errorf("%d tools, want %d", len(st.Tools), exagentv1.MaxAgentTools)
	}
	for _, tl := range st.Tools {
		if len(tl.Message) > exagentv1.MaxAgentStatusMessage {
			t.Fatalf("tool message of %d bytes", len(tl.Message))
		}
	}
	msg := condOf(st, exagentv1.ConditionReady).Message
	if len(msg) > exagentv1.MaxAgentStatusMessage || !strings.Contains(msg, "more") || !strings.HasPrefix(msg, `tool "t0": x`) {
		t.Errorf("Ready message of %d bytes: %.80q…", len(msg), msg)
	}
	if !utf8Valid(msg) {
		t.Errorf("Ready message is not valid UTF-8")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }

// TestAgentRecheck: a Ready Agent waits the interval; one not Ready waits
// as long as it has been not Ready, between the base and the interval;
// an instant a check waits for comes first.
func TestAgentRecheck(t *testing.T) {
	const interval = 5 * time.Minute
	notReadySince := func(d time.Duration) exagentv1.AgentStatus {
		return exagentv1.AgentStatus{Conditions: []metav1.Condition{{Type: exagentv1.ConditionReady, Status: metav1.ConditionFalse,
			LastTransitionTime: metav1.NewTime(agentT0.Add(-d))}}}
	}
	ready := exagentv1.AgentStatus{Conditions: []metav1.Condition{{Type: exagentv1.ConditionReady, Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(agentT0.Add(-time.Hour))}}}
	tests := map[string]struct {
		st       exagentv1.AgentStatus
		soonest  time.Duration
		interval time.Duration
		spread   uint32
		want     time.Duration
	}{
		"ready, the most stretch":         {st: ready, interval: interval, spread: 1023, want: interval + interval/10*1023/1024},
		"ready, a listing due, stretched": {st: ready, soonest: 16 * time.Second, interval: interval, spread: 512, want: 16 * time.Second},
		"not ready is never stretched":    {st: notReadySince(time.Hour), interval: interval, spread: 1023, want: interval},
		"ready":                           {st: ready, interval: interval, want: interval},
		"ready, a listing due":            {st: ready, soonest: 16 * time.Second, interval: interval, want: 16 * time.Second},
		"just not ready":                  {st: notReadySince(0), interval: interval, want: agentRetryBase},
		"not ready for 40s":               {st: notReadySince(40 * time.Second), interval: interval, want: 40 * time.Second},
		"not ready for an hour":           {st: notReadySince(time.Hour), interval: interval, want: interval},
		"an interval below the base":      {st: notReadySince(0), interval: time.Second, want: time.Second},
		"not ready, a backoff ends":       {st: notReadySince(time.Hour), soonest: 2 * time.Second, interval: interval, want: 2 * time.Second},
		"never checked (no condition)":    {st: exagentv1.AgentStatus{}, interval: interval, want: interval},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := agentRecheck(tc.st, tc.soonest, tc.interval, tc.spread, agentT0); got != tc.want {
				t.Errorf("agentRecheck = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAgentNotReady: a run's message names its Agent's failing condition
// only when that check is of the Agent's current generation.
func TestAgentNotReady(t *testing.T) {
	agent := func(gen, observed int64, status metav1.ConditionStatus) *exagentv1.Agent {
		a := &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "pay", Generation: gen}}
		a.Status.ObservedGeneration = observed
		a.Status.Conditions = []metav1.Condition{{Type: exagentv1.ConditionReady, Status: status, ObservedGeneration: observed,
			Reason: exagentv1.ReasonSecretNotFound, Message: `model (apiKeySecretRef): Secret "k" does not exist`}}
		return a
	}
	tests := map[string]struct {
		agent *exagentv1.Agent
		want  string
	}{
		"not ready": {agent: agent(2, 2, metav1.ConditionFalse),
			want: `; Agent "pay" is not Ready (SecretNotFound): model (apiKeySecretRef): Secret "k" does not exist`},
		"ready":                    {agent: agent(2, 2, metav1.ConditionTrue)},
		"checked an older spec":    {agent: agent(3, 2, metav1.ConditionFalse)},
		"no agent":                 {},
		"not checked yet":          {agent: &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "pay", Generation: 1}}},
		"still checking (Unknown)": {agent: agent(2, 2, metav1.ConditionUnknown)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reason, got := agentNotReady(tc.agent)
			if got != tc.want || (got == "") != (reason == "") || (reason != "" && reason != exagentv1.ReasonSecretNotFound) {
				t.Errorf("agentNotReady = %q, %q; want %q", reason, got, tc.want)
			}
		})
	}
}
