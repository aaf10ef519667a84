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
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/model"
)

func TestOverridesChanged(t *testing.T) {
	have := []metav1.Condition{{Type: "Ready", Status: "False", Reason: "AgentNotFound", Message: "m"}}
	tests := map[string]struct {
		want []metav1.Condition
		exp  bool
	}{
		"none":             {exp: false},
		"same":             {want: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "AgentNotFound", Message: "m"}}, exp: false},
		"other reason":     {want: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "DefinitionChanged", Message: "m"}}, exp: true},
		"missing the type": {want: []metav1.Condition{{Type: "Uncertain", Status: "True", Reason: "X"}}, exp: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := overridesChanged(have, tc.want); got != tc.exp {
				t.Errorf("overridesChanged = %v, want %v", got, tc.exp)
			}
		})
	}
}

func TestEndpoints(t *testing.T) {
	tests := map[string]struct {
		got, want string
	}{
		"scripted model":    {got: modelEndpoint(&exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted}), want: "model:scripted"},
		"openai by host":    {got: modelEndpoint(&exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, BaseURL: "http://llm:8080/v1"}), want: "model:llm:8080"},
		"openai default":    {got: modelEndpoint(&exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI}), want: "model:openai"},
		"http tool by host": {got: toolEndpoint(&exagentv1.ToolSpec{HTTP: &exagentv1.HTTPTool{URL: "https://pay.example/refund"}}), want: "tool:pay.example"},
		"builtin":           {got: toolEndpoint(&exagentv1.ToolSpec{Builtin: &exagentv1.BuiltinTool{}}), want: "tool:kube-apiserver"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("endpoint = %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// TestInbox checks that results are returned once, in order, that a failed
// commit's results go back ahead of newer ones, and that in-flight counts
// follow dispatch and delivery.
func TestInbox(t *testing.T) {
	b := newInbox()
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	res := func(id string) ioResult { return ioResult{tool: &loop.ToolResult{CallID: id}} }
	ids := func(rs []ioResult) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.tool.CallID)
		}
		return out
	}
	b.started(key, 3)
	b.deliver(key, res("a"))
	got, inFlight := b.take(key)
	if diff := cmp.Diff([]string{"a"}, ids(got)); diff != "" || inFlight != 2 {
		t.Fatalf("take = %v (in flight %d), want [a] (2)", ids(got), inFlight)
	}
	b.deliver(key, res("b"))
	b.putBack(key, got)
	b.abandon(key)
	got, inFlight = b.take(key)
	if diff := cmp.Diff([]string{"a", "b"}, ids(got)); diff != "" || inFlight != 0 {
		t.Fatalf("take = %v (in flight %d), want [a b] (0)", ids(got), inFlight)
	}
	if got, _ := b.take(key); len(got) != 0 {
		t.Errorf("results returned twice: %v", ids(got))
	}
}

func TestIsScriptExhausted(t *testing.T) {
	if !isScriptExhausted(fmt.Errorf("step 3: %w", model.ErrScriptExhausted)) || isScriptExhausted(errors.New("boom")) {
		t.Error("isScriptExhausted misclassifies")
	}
}
