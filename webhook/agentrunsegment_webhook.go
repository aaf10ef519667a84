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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// Only CREATE is intercepted: UPDATE is refused by the CRD's CEL rule (a
// segment's spec is immutable), and DELETE stays open to whoever RBAC lets
// delete (an admin cleaning up; the run then stops with TranscriptCorrupt).
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-agentrunsegment,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agentrunsegments,verbs=create,versions=v1beta1,name=vagentrunsegment.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10

// AgentRunSegmentWebhook admits AgentRunSegments from the manager alone.
// A segment is part of a run's journal: whoever could create one could not
// change a verified chain (names are content hashes, the status holds the
// head), but could plant look-alike objects next to it, so RBAC's create
// (which a cluster admin holds anyway) is not enough.
type AgentRunSegmentWebhook struct {
	// Manager is the manager's own username: the only creator admitted.
	Manager string
}

var _ admission.Validator[*exagentv1.AgentRunSegment] = &AgentRunSegmentWebhook{}

// ValidateCreate refuses every creator but the manager, and a manager's
// segment whose name, labels or owner do not match its content.
func (w *AgentRunSegmentWebhook) ValidateCreate(ctx context.Context, seg *exagentv1.AgentRunSegment) (admission.Warnings, error) {
	req, err := requester(ctx)
	if err != nil {
		return nil, err
	}
	if user := req.UserInfo.Username; w.Manager == "" || user != w.Manager {
		return nil, apierrors.NewForbidden(agentRunSegmentGR, seg.Name, fmt.Errorf(
			"AgentRunSegments are written only by the exagent manager, as it commits a run's transcript: "+
				"user %q may read them (ClusterRole exagent-viewer), not create them", user))
	}
	return nil, invalid(agentRunSegmentGK, seg.Name, ValidateAgentRunSegment(seg))
}

// ValidateUpdate is never called (the webhook is registered for CREATE only).
func (w *AgentRunSegmentWebhook) ValidateUpdate(context.Context, *exagentv1.AgentRunSegment, *exagentv1.AgentRunSegment) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete is never called: deletes are allowed.
func (w *AgentRunSegmentWebhook) ValidateDelete(context.Context, *exagentv1.AgentRunSegment) (admission.Warnings, error) {
	return nil, nil
}

// ValidateAgentRunSegment checks what the manager's segments always
// satisfy (store.Segments.Create): the name is the content hash, the
// content fits MaxSegmentBytes, the run-uid label and the controlling
// ownerReference name the run of spec.runUID. Defence in depth: a manager
// bug, or its credentials used by hand, cannot store a segment the chain
// check would later have to reject.
func ValidateAgentRunSegment(seg *exagentv1.AgentRunSegment) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	name, size, err := segment.Name(&seg.Spec)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(field.NewPath("spec"), "<content>", err.Error()))
	case seg.Name != name:
		errs = append(errs, field.Invalid(meta.Child("name"), seg.Name,
			"must be the sha256 of the segment's content, "+name))
	}
	if size > exagentv1.MaxSegmentBytes {
		errs = append(errs, field.TooLong(field.NewPath("spec"), size, exagentv1.MaxSegmentBytes))
	}
	uid := seg.Spec.RunUID
	if got := seg.Labels[exagentv1.LabelRunUID]; got != uid {
		errs = append(errs, field.Invalid(meta.Child("labels").Key(exagentv1.LabelRunUID), got,
			fmt.Sprintf("must be spec.runUID %q", uid)))
	}
	owners := meta.Child("ownerReferences")
	owner := -1
	for i, ref := range seg.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			owner = i
		}
	}
	if owner < 0 {
		errs = append(errs, field.Required(owners, "the segment's run (kind AgentRun, uid spec.runUID) must be its controlling owner"))
		return errs
	}
	ref := seg.OwnerReferences[owner]
	path := owners.Index(owner)
	if ref.APIVersion != exagentv1.GroupVersion.String() || ref.Kind != "AgentRun" {
		errs = append(errs, field.Invalid(path.Child("kind"), ref.APIVersion+"/"+ref.Kind,
			"must be "+exagentv1.GroupVersion.String()+"/AgentRun"))
	}
	if string(ref.UID) != uid {
		errs = append(errs, field.Invalid(path.Child("uid"), ref.UID, fmt.Sprintf("must be spec.runUID %q", uid)))
	}
	if ref.Name != seg.Spec.RunName {
		errs = append(errs, field.Invalid(path.Child("name"), ref.Name, fmt.Sprintf("must be spec.runName %q", seg.Spec.RunName)))
	}
	return errs
}
