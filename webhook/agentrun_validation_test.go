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

package webhook_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

func TestValidateAgentRun(t *testing.T) {
	cases := map[string]struct {
		run, old *exagentv1.AgentRun
		want     []string
	}{
		"minimal": {run: run()},
		"every duration set": {run: run(func(r *exagentv1.AgentRun) {
			r.Spec.ApprovalTimeout, r.Spec.ActiveTimeLimit, r.Spec.LeaseDuration = "48h", "1h30m", "15s"
		})},
		"Never where it is allowed": {run: run(func(r *exagentv1.AgentRun) {
			r.Spec.ApprovalTimeout, r.Spec.ActiveTimeLimit = exagentv1.Never, exagentv1.Never
		})},
		"a lease cannot be Never": {
			run:  run(func(r *exagentv1.AgentRun) { r.Spec.LeaseDuration = exagentv1.Never }),
			want: []string{"FieldValueInvalid spec.leaseDuration"},
		},
		"zero and malformed durations": {
			run: run(func(r *exagentv1.AgentRun) {
				r.Spec.ApprovalTimeout, r.Spec.ActiveTimeLimit, r.Spec.LeaseDuration = "0s", "soon", "-1s"
			}),
			want: []string{"FieldValueInvalid spec.approvalTimeout", "FieldValueInvalid spec.activeTimeLimit", "FieldValueInvalid spec.leaseDuration"},
		},
		"a TTL of 0 deletes at once": {
			run: run(func(r *exagentv1.AgentRun) { r.Spec.TTLSecondsAfterFinished = new(int32(0)) }),
		},
		"a negative TTL": {
			run:  run(func(r *exagentv1.AgentRun) { r.Spec.TTLSecondsAfterFinished = new(int32(-1)) }),
			want: []string{"FieldValueInvalid spec.ttlSecondsAfterFinished"},
		},
		"a lease of exactly the minimum": {
			run: run(func(r *exagentv1.AgentRun) { r.Spec.LeaseDuration = "5s" }),
		},
		"a lease below the minimum": {
			run:  run(func(r *exagentv1.AgentRun) { r.Spec.LeaseDuration = "10ms" }),
			want: []string{"FieldValueInvalid spec.leaseDuration"},
		},
		"a lease just below the minimum": {
			run:  run(func(r *exagentv1.AgentRun) { r.Spec.LeaseDuration = "4.999s" }),
			want: []string{"FieldValueInvalid spec.leaseDuration"},
		},
		"lowercase never is not Never": {
			run:  run(func(r *exagentv1.AgentRun) { r.Spec.ApprovalTimeout = "never" }),
			want: []string{"FieldValueInvalid spec.approvalTimeout"},
		},
		"service account name": {
			run: run(func(r *exagentv1.AgentRun) { r.Spec.ServiceAccountName = "payments-bot" }),
		},
		"invalid service account name": {
			run:  run(func(r *exagentv1.AgentRun) { r.Spec.ServiceAccountName = "Payments_Bot" }),
			want: []string{"FieldValueInvalid spec.serviceAccountName"},
		},
		"agent and input required": {
			run:  run(func(r *exagentv1.AgentRun) { r.Spec.AgentRef.Name, r.Spec.Input = "", "" }),
			want: []string{"FieldValueRequired spec.agentRef.name", "FieldValueRequired spec.input"},
		},
		"update of metadata only": {
			run: run(func(r *exagentv1.AgentRun) { r.Finalizers = []string{"exagent.io/run"} }),
			old: run(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errKeys(webhook.ValidateAgentRun(tc.run, tc.old))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateAgentRunLeaseMessage: the refusal names the field, the
// minimum and why.
func TestValidateAgentRunLeaseMessage(t *testing.T) {
	errs := webhook.ValidateAgentRun(run(func(r *exagentv1.AgentRun) { r.Spec.LeaseDuration = "10ms" }), nil)
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one", errs)
	}
	msg := errs[0].Error()
	for _, want := range []string{"spec.leaseDuration", `"10ms"`, "at least " + exagentv1.MinLeaseDuration.String(), "model request"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
}
