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
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestFormatError(t *testing.T) {
	denied := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `admission webhook "vapprovaldecision.exagent.io" denied the request: you are not allowed to approve runs of agent "payments": missing verb "approve" on agents/approval`,
	}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "exagent.io", Resource: "approvaldecisions"}, "",
		errors.New(`User "bob" cannot create resource "approvaldecisions" in API group "exagent.io" in the namespace "demo"`))
	tests := map[string]struct {
		err  error
		want string
	}{
		"webhook denial loses the preamble, even wrapped": {
			err:  fmt.Errorf("creating the approve decision for run %q: %w", "pay-1", denied),
			want: `error: you are not allowed to approve runs of agent "payments": missing verb "approve" on agents/approval`,
		},
		"webhook denial with a Forbidden status of its own (as the apiserver relays it)": {
			err: &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `admission webhook "vapprovaldecision.exagent.io" denied the request: approvaldecisions.exagent.io "probe" is forbidden: you are not allowed to approve runs of agent "ops": missing verb "approve" on agents/approval`,
			}},
			want: `error: you are not allowed to approve runs of agent "ops": missing verb "approve" on agents/approval`,
		},
		"webhook forbidden status loses the object's name": {
			err: fmt.Errorf("creating: %w", apierrors.NewForbidden(schema.GroupResource{Group: "exagent.io", Resource: "approvaldecisions"}, "scale-web-approve-hc9q8",
				errors.New(`you are not allowed to approve runs of agent "ops": missing verb "approve" on agents/approval`))),
			want: `error: you are not allowed to approve runs of agent "ops": missing verb "approve" on agents/approval`,
		},
		"rbac forbidden reads like kubectl": {
			err:  fmt.Errorf("creating: %w", forbidden),
			want: `Error from server (Forbidden): approvaldecisions.exagent.io is forbidden: User "bob" cannot create resource "approvaldecisions" in API group "exagent.io" in the namespace "demo"`,
		},
		"not found": {
			err:  apierrors.NewNotFound(schema.GroupResource{Group: "exagent.io", Resource: "agentruns"}, "x"),
			want: `Error from server (NotFound): agentruns.exagent.io "x" not found`,
		},
		"plugin error": {
			err:  errors.New(`run "x" not found in namespace "demo"`),
			want: `error: run "x" not found in namespace "demo"`,
		},
		"several failures, one line each": {
			err:  multiError{fmt.Errorf("approval %q: %w", "a", denied), errors.New("approval b: payload changed")},
			want: "error: you are not allowed to approve runs of agent \"payments\": missing verb \"approve\" on agents/approval\nerror: approval b: payload changed",
		},
		"unknown reason": {
			err:  &apierrors.StatusError{ErrStatus: metav1.Status{Message: "etcdserver: request timed out"}},
			want: "Error from server: etcdserver: request timed out",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, FormatError(tc.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
