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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// runBuilder builds AgentRuns fluently for tests.
type runBuilder struct{ r exagentv1.AgentRun }

func makeRun(name, ns string) *runBuilder {
	return &runBuilder{r: exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: exagentv1.AgentRunSpec{
			AgentRef: exagentv1.LocalObjectReference{Name: "ops"},
			Input:    "scale web to 3",
		},
	}}
}

func (b *runBuilder) phase(p exagentv1.RunPhase) *runBuilder { b.r.Status.Phase = p; return b }
func (b *runBuilder) revision(n int64) *runBuilder           { b.r.Status.Revision = n; return b }

// call adds a journal entry.
func (b *runBuilder) call(id, tool, args string, state exagentv1.CallState) *runBuilder {
	b.r.Status.Calls = append(b.r.Status.Calls, exagentv1.ToolCall{
		ID: id, Tool: tool, Args: args, State: state, PayloadHash: "sha256:" + id + "0123456789abcdef",
	})
	return b
}

// approval adds an approval for callID, requested ago before t0, expiring in.
func (b *runBuilder) approval(id, callID string, state exagentv1.ApprovalState, ago, in time.Duration) *runBuilder {
	a := exagentv1.Approval{
		ID: id, CallID: callID, State: state, Revision: b.r.Status.Revision,
		PayloadHash: "sha256:" + callID + "0123456789abcdef",
		Rule:        "ask-before-scaling",
		RequestedAt: metav1.NewTime(t0.Add(-ago)),
	}
	if in != 0 {
		exp := metav1.NewTime(t0.Add(in))
		a.ExpiresAt = &exp
	}
	b.r.Status.Approvals = append(b.r.Status.Approvals, a)
	return b
}

func (b *runBuilder) history(m ...exagentv1.Message) *runBuilder {
	b.r.Status.History = append(b.r.Status.History, m...)
	return b
}

func (b *runBuilder) obj() *exagentv1.AgentRun { r := b.r.DeepCopy(); return r }
