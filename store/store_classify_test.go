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

package store

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestUnstorableSegment: which refusals of a segment create end the run
// (and with which reason) and which are retried. The shapes are the
// apiserver's: quota admission's Forbidden "exceeded quota", a webhook's
// and a ValidatingAdmissionPolicy's denial, the schema's 422, etcd's
// "request is too large"; the quota case is also met for real in
// TestSegmentQuotaEndsTheRun.
func TestUnstorableSegment(t *testing.T) {
	gr := schema.GroupResource{Group: "exagent.io", Resource: "agentrunsegments"}
	forbidden := func(msg string) error { return apierrors.NewForbidden(gr, "abc", errors.New(msg)) }
	tests := map[string]struct {
		err        error
		wantReason string // "" means retried
		wantQuota  string
	}{
		"quota full": {
			err:        forbidden("exceeded quota: exagent, requested: count/agentrunsegments.exagent.io=1, used: count/agentrunsegments.exagent.io=2, limited: count/agentrunsegments.exagent.io=2"),
			wantReason: exagentv1.ReasonSegmentQuotaExceeded, wantQuota: "exagent",
		},
		"quota usage not computed yet": {err: forbidden("status unknown for quota: exagent, resources: count/agentrunsegments.exagent.io")},
		"RBAC":                         {err: apierrors.NewForbidden(gr, "", errors.New(`User "system:serviceaccount:exagent-system:exagent" cannot create resource "agentrunsegments"`))},
		"webhook denial": {
			err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
				Message: `admission webhook "policy.example.com" denied the request: no large objects`}},
			wantReason: exagentv1.ReasonStatusRejected,
		},
		"admission policy denial": {
			err:        forbidden("ValidatingAdmissionPolicy 'no-segments' with binding 'b' denied request: failed expression: false"),
			wantReason: exagentv1.ReasonStatusRejected,
		},
		"webhook unreachable": {err: apierrors.NewInternalError(errors.New(`failed calling webhook "policy.example.com": connection refused`))},
		"invalid": {
			err:        apierrors.NewInvalid(schema.GroupKind{Group: "exagent.io", Kind: "AgentRunSegment"}, "abc", nil),
			wantReason: exagentv1.ReasonStatusRejected,
		},
		"too large":   {err: errors.New("etcdserver: request is too large"), wantReason: exagentv1.ReasonStatusTooLarge},
		"unreachable": {err: fmt.Errorf("creating segment 3: %w", errors.New("connection refused"))},
		"conflict":    {err: apierrors.NewConflict(gr, "abc", errors.New("changed"))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := unstorableSegment(fmt.Errorf("creating segment 3 (abc) of run r: %w", tc.err), "a transcript segment of run ns/r")
			u, ok := AsUnstorable(err)
			if tc.wantReason == "" {
				if err != nil {
					t.Fatalf("classified %v as final (%v): want it retried", tc.err, err)
				}
				return
			}
			if !ok || u.Reason != tc.wantReason || !u.Segment {
				t.Fatalf("got %#v, want reason %s for a segment", err, tc.wantReason)
			}
			if got := QuotaName(u.Error()); got != tc.wantQuota {
				t.Errorf("quota named %q, want %q", got, tc.wantQuota)
			}
		})
	}
}
