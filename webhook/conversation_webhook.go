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
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// The validating webhook's matchCondition skips UPDATEs that leave spec as
// it was: its checks read only spec.
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-conversation,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=conversations,verbs=update,versions=v1beta1,name=vconversation.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"matchConditions":[{"name":"spec-changed","expression":"object.spec != oldObject.spec"}]}`

var conversationGK = schema.GroupKind{Group: exagentv1.GroupVersion.Group, Kind: "Conversation"}

// ConversationWebhook refuses, while a turn of a conversation is open,
// the changes that would rewrite what that turn runs under: its agentRef,
// and a participant removed or given another Agent. Between turns they may
// change (the next turn runs under the new definition).
type ConversationWebhook struct {
	// Reader lists the conversation's turns past the cache.
	Reader client.Reader
}

var _ admission.Validator[*exagentv1.Conversation] = &ConversationWebhook{}

// ValidateCreate admits every new Conversation (the CRD's schema checks its shape).
func (w *ConversationWebhook) ValidateCreate(context.Context, *exagentv1.Conversation) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate refuses a change of who takes turns while one is open.
func (w *ConversationWebhook) ValidateUpdate(ctx context.Context, old, conv *exagentv1.Conversation) (admission.Warnings, error) {
	changed := participantsChanged(old, conv)
	if changed == nil {
		return nil, nil
	}
	runs := &AgentRunWebhook{Reader: w.Reader}
	turns, err := runs.turnsOf(ctx, conv)
	if err != nil {
		return nil, err
	}
	open := loop.ViewConversation(loop.TurnViews(turns), false, 0).Open
	if open == "" {
		return nil, nil
	}
	return nil, invalid(conversationGK, conv.Name, field.ErrorList{field.Forbidden(changed,
		fmt.Sprintf("turn %s is open and runs under it: change it once the turn has ended (or cancel the turn)", open))})
}

// ValidateDelete allows deletes (the webhook is not registered for them).
func (w *ConversationWebhook) ValidateDelete(context.Context, *exagentv1.Conversation) (admission.Warnings, error) {
	return nil, nil
}

// participantsChanged is the path of the first change of who takes turns:
// spec.agentRef, or a participant removed or given another Agent (nil
// when none; adding a participant changes no turn).
func participantsChanged(old, conv *exagentv1.Conversation) *field.Path {
	spec := field.NewPath("spec")
	if old.Spec.AgentRef != conv.Spec.AgentRef {
		return spec.Child("agentRef")
	}
	for _, p := range old.Spec.Participants {
		i := slices.IndexFunc(conv.Spec.Participants, func(q exagentv1.Participant) bool { return q.Name == p.Name })
		if i < 0 {
			return spec.Child("participants").Key(p.Name)
		}
		q := conv.Spec.Participants[i]
		if (p.AgentRef == nil) != (q.AgentRef == nil) || p.AgentRef != nil && *p.AgentRef != *q.AgentRef {
			return spec.Child("participants").Key(p.Name).Child("agentRef")
		}
	}
	return nil
}
