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

package app

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestShowLimits: show prints the limits the run holds (status.limits,
// journaled at its first claim) with what it used of them; a run not
// claimed yet has none to print.
func TestShowLimits(t *testing.T) {
	run := makeRun("pay", "demo").Phase(exagentv1.PhaseAwaitingApproval).Obj()
	run.Status.Limits = &exagentv1.RunLimits{MaxSteps: new(int32(5)), MaxToolCalls: new(int32(2)), MaxTokens: new(int64(1000)),
		MaxRuns: new(int32(32)), MaxDepth: new(int32(3)), ActiveTime: &metav1.Duration{Duration: 10 * time.Minute}}
	run.Status.Ledger = exagentv1.Ledger{ToolCalls: 1, PromptTokens: 10, CompletionTokens: 5, ActiveTimeUsed: metav1.Duration{Duration: 90 * time.Second}}
	var out strings.Builder
	if err := renderShow(&out, showView{Run: run, Agent: &exagentv1.Agent{}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	want := "Limits:           maxSteps 5, maxToolCalls 2 (1 used), maxTokens 1000 (15 used), activeTime 10m0s (1m30s used), maxRuns 32, maxDepth 3"
	if !strings.Contains(out.String(), want+"\n") {
		t.Errorf("show printed\n%s\nwant the line %q", out.String(), want)
	}
	run.Status.Limits = nil
	out.Reset()
	if err := renderShow(&out, showView{Run: run, Agent: &exagentv1.Agent{}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Limits:") {
		t.Errorf("show printed limits for a run that journaled none:\n%s", out.String())
	}
}
