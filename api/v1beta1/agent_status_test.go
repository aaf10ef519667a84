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

package v1beta1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestAgentStatusBounds: the bounds the Agent controller truncates with
// (MaxAgentTools, MaxAgentStatusMessage) are the ones the CRD enforces on
// status.tools: a status at them is stored, one past them refused.
func TestAgentStatusBounds(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	tool := func(i int, msg string) exagentv1.AgentToolStatus {
		return exagentv1.AgentToolStatus{Name: fmt.Sprintf("t%d", i), Kind: "http", Reason: exagentv1.ReasonSecretNotFound, Message: msg}
	}
	tests := map[string]struct {
		tools []exagentv1.AgentToolStatus
		ok    bool
	}{
		"at the bounds": {tools: func() []exagentv1.AgentToolStatus {
			out := []exagentv1.AgentToolStatus{}
			for i := range exagentv1.MaxAgentTools {
				out = append(out, tool(i, strings.Repeat("m", exagentv1.MaxAgentStatusMessage)))
			}
			return out
		}(), ok: true},
		"one tool too many": {tools: func() []exagentv1.AgentToolStatus {
			out := []exagentv1.AgentToolStatus{}
			for i := range exagentv1.MaxAgentTools + 1 {
				out = append(out, tool(i, ""))
			}
			return out
		}()},
		"a message too long": {tools: []exagentv1.AgentToolStatus{tool(0, strings.Repeat("m", exagentv1.MaxAgentStatusMessage+1))}},
	}
	i := 0
	for name, tc := range tests {
		i++
		t.Run(name, func(t *testing.T) {
			a := sampleAgent(ns, fmt.Sprintf("bounds-%d", i))
			if err := env().Client.Create(ctx, a); err != nil {
				t.Fatal(err)
			}
			a.Status.Tools = tc.tools
			err := env().Client.Status().Update(ctx, a)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("status at the bounds refused: %v", err)
			case !tc.ok && !apierrors.IsInvalid(err):
				t.Fatalf("status past the bounds: err %v, want Invalid", err)
			}
		})
	}
}

// TestAgentReadyColumns: kubectl get agents shows the Ready condition's
// status and reason (and, with -o wide, its message).
func TestAgentReadyColumns(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	a := sampleAgent(ns, "pay")
	if err := env().Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Status.ObservedGeneration = a.Generation
	a.Status.Conditions = []metav1.Condition{{Type: exagentv1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: exagentv1.ReasonSecretKeyNotFound, Message: `tool "notify": Secret "hook" has no key "token"`,
		ObservedGeneration: a.Generation, LastTransitionTime: metav1.NewTime(time.Now())}}
	if err := env().Client.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env().Config)
	cfg.GroupVersion = &exagentv1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = clientNegotiator()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().Namespace(ns).Resource("agents").Name("pay").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	got := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		got[c.Name] = table.Rows[0].Cells[i]
	}
	want := map[string]any{"READY": "False", "REASON": exagentv1.ReasonSecretKeyNotFound, "MESSAGE": `tool "notify": Secret "hook" has no key "token"`}
	for k, v := range want {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("column %s (-want +got):\n%s", k, diff)
		}
	}
}
