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

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// makeRun is where the plugin's runs start (internal/testing/fixture): a
// run of Agent ops asked to scale web to 3.
func makeRun(name, ns string) *fixture.RunWrapper {
	return fixture.MakeRun(name, ns).Agent("ops").Input("scale web to 3")
}

// call is a journal entry (RunWrapper.Call), with the payload hash
// approval gives its approval.
func call(id, tool, args string, state exagentv1.CallState) exagentv1.ToolCall {
	return exagentv1.ToolCall{ID: id, Tool: tool, Args: args, State: state, PayloadHash: "sha256:" + id + "0123456789abcdef"}
}

// approval is an approval for callID at revision (RunWrapper.Approval),
// requested ago before t0, expiring in after t0 (0: never).
func approval(id, callID string, revision int64, state exagentv1.ApprovalState, ago, in time.Duration) exagentv1.Approval {
	a := exagentv1.Approval{
		ID: id, CallID: callID, State: state, Revision: revision,
		PayloadHash: "sha256:" + callID + "0123456789abcdef",
		Rule:        "ask-before-scaling",
		RequestedAt: metav1.NewTime(t0.Add(-ago)),
	}
	if in != 0 {
		exp := metav1.NewTime(t0.Add(in))
		a.ExpiresAt = &exp
	}
	return a
}
