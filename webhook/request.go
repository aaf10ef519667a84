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

package webhook

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// requester returns the admission request controller-runtime put in ctx.
// Its absence is a wiring bug; failing closed keeps it from admitting.
func requester(ctx context.Context) (admission.Request, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return admission.Request{}, apierrors.NewInternalError(fmt.Errorf("no admission request in context: %w", err))
	}
	return req, nil
}

// checkStamped returns a field error unless written is the stamped actor:
// identities are stamped by admission, never authored by the client.
func checkStamped(path *field.Path, written *exagentv1.Actor, stamped exagentv1.Actor) *field.Error {
	if written == nil {
		return field.Required(path, "is stamped by the exagent mutating webhook from the authenticated user; it is missing, so the mutating webhook did not run")
	}
	if !authz.SameActor(*written, stamped) {
		return field.Forbidden(path, fmt.Sprintf(
			"is stamped from the authenticated user %q; a client-written identity (%q) is not accepted",
			stamped.Username, written.Username))
	}
	return nil
}

// isCreate reports whether req creates an object; defaulting stamps
// identities only then (the spec is immutable afterwards).
func isCreate(req admission.Request) bool {
	return req.Operation == admissionv1.Create
}

var (
	agentGK            = schema.GroupKind{Group: exagentv1.GroupVersion.Group, Kind: "Agent"}
	agentRunGK         = schema.GroupKind{Group: exagentv1.GroupVersion.Group, Kind: "AgentRun"}
	agentRunGR         = schema.GroupResource{Group: exagentv1.GroupVersion.Group, Resource: "agentruns"}
	approvalDecisionGK = schema.GroupKind{Group: exagentv1.GroupVersion.Group, Kind: "ApprovalDecision"}
	approvalDecisionGR = schema.GroupResource{Group: exagentv1.GroupVersion.Group, Resource: "approvaldecisions"}
	agentRunSegmentGK  = schema.GroupKind{Group: exagentv1.GroupVersion.Group, Kind: "AgentRunSegment"}
	agentRunSegmentGR  = schema.GroupResource{Group: exagentv1.GroupVersion.Group, Resource: "agentrunsegments"}
)

// invalid turns a field.ErrorList into the apiserver's 422 with causes, so
// the user sees every failing field path; nil when errs is empty.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}
