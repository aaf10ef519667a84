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
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// managerTriggered reports whether run is one an AgentTrigger made: the
// manager created it, labelled with its trigger (not a child, not a turn,
// not a schedule's).
func (w *AgentRunWebhook) managerTriggered(run *exagentv1.AgentRun, creator exagentv1.Actor) bool {
	return w.Manager != "" && creator.Username == w.Manager && run.Labels[exagentv1.LabelTrigger] != "" &&
		run.Labels[exagentv1.LabelSchedule] == "" && run.Spec.Delegation == nil && run.Spec.ConversationRef == nil
}

// checkTriggered admits a run the manager created for a trigger only when
// the trigger exists and owns it, its setter is sealed, the run carries
// that setter as requestedBy, and it asks for what the trigger's template
// asks (the Agent and ServiceAccount the setter was authorized for, its
// input first): the event's caller chose only the rest of the input.
func (w *AgentRunWebhook) checkTriggered(ctx context.Context, run *exagentv1.AgentRun) (*field.Error, error) {
	name := run.Labels[exagentv1.LabelTrigger]
	path := field.NewPath("metadata", "labels").Key(exagentv1.LabelTrigger)
	owner := slices.IndexFunc(run.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "AgentTrigger" })
	if owner < 0 {
		return field.Forbidden(field.NewPath("metadata", "ownerReferences"), "a triggered run is owned by its AgentTrigger"), nil
	}
	// The label holds a label-safe form of the name; the owner reference
	// the name itself.
	t := &exagentv1.AgentTrigger{}
	ref := run.OwnerReferences[owner]
	if err := w.Reader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}, t); err != nil {
		if kerrors.IsNotFound(err) {
			return field.NotFound(path, fmt.Sprintf("AgentTrigger %s: the exagent manager creates runs only for triggers that exist", ref.Name)), nil
		}
		return nil, kerrors.NewInternalError(fmt.Errorf("reading AgentTrigger %s/%s: %w", run.Namespace, ref.Name, err))
	}
	if t.UID != ref.UID || exagentv1.LabelValue(t.Name) != name {
		return field.Forbidden(field.NewPath("metadata", "ownerReferences"), fmt.Sprintf(
			"a triggered run is owned by its AgentTrigger %s (uid %s) and labelled with it", t.Name, t.UID)), nil
	}
	if w.Signer != nil {
		if err := w.Signer.VerifyTrigger(t); err != nil {
			return field.Forbidden(path, fmt.Sprintf("AgentTrigger %s: %v; apply its spec again", t.Name, err)), nil
		}
	}
	var setter exagentv1.Actor
	if err := json.Unmarshal([]byte(t.Annotations[exagentv1.AnnotationSpecSetBy]), &setter); err != nil || setter.Username == "" {
		return field.Forbidden(path, fmt.Sprintf("AgentTrigger %s has no %s stamped by admission: apply its spec again", t.Name, exagentv1.AnnotationSpecSetBy)), nil
	}
	if run.Spec.RequestedBy == nil || !authz.SameActor(setter, *run.Spec.RequestedBy) {
		return field.Forbidden(field.NewPath("spec", "requestedBy"), fmt.Sprintf(
			"a triggered run carries the person who last set AgentTrigger %s's spec (%q)", t.Name, setter.Username)), nil
	}
	want := t.Spec.RunTemplate.RunSpec(&setter)
	if run.Spec.AgentRef != want.AgentRef || run.Spec.ServiceAccountName != want.ServiceAccountName ||
		!strings.HasPrefix(run.Spec.Input, want.Input) {
		return field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
			"a triggered run asks for what AgentTrigger %s's spec.runTemplate asks (agent %q, serviceAccountName %q, its input first)",
			t.Name, want.AgentRef.Name, want.ServiceAccountName)), nil
	}
	return nil, nil
}
