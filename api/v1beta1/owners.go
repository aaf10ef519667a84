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

package v1beta1

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// What a run owns, the garbage collector deletes with it: its segments and
// child runs (controller references, created by the manager) and the
// decisions made on it (a plain reference, set at admission). exagent has
// no delete path of its own for them.

// RunControllerReference is the owner reference of an object the manager
// creates for run: a segment of its transcript, or a child run (block:
// a foreground delete of the parent waits for it).
func RunControllerReference(run *AgentRun, block bool) metav1.OwnerReference {
	ref := metav1.OwnerReference{
		APIVersion: GroupVersion.String(), Kind: "AgentRun", Name: run.Name, UID: run.UID, Controller: ptr.To(true),
	}
	if block {
		ref.BlockOwnerDeletion = ptr.To(true)
	}
	return ref
}

// SetRunOwner makes run the decision's only AgentRun owner, replacing any
// AgentRun owner its author wrote: a decision belongs to the run it names
// as it exists now. Not a controller reference, and no
// blockOwnerDeletion: the decision is its author's object (who needs no
// right on the run's finalizers), and deleting the run must not wait for
// it. A run with no UID (not found) leaves the decision with no run owner.
func (d *ApprovalDecision) SetRunOwner(run *AgentRun) {
	owners := slices.DeleteFunc(slices.Clone(d.OwnerReferences), func(o metav1.OwnerReference) bool {
		return o.Kind == "AgentRun" && o.APIVersion == GroupVersion.String()
	})
	if run != nil && run.UID != "" {
		owners = append(owners, metav1.OwnerReference{APIVersion: GroupVersion.String(), Kind: "AgentRun", Name: run.Name, UID: run.UID})
	}
	if len(owners) == 0 {
		owners = nil
	}
	d.OwnerReferences = owners
}

// RunOwner is the UID of the AgentRun owner of d, empty when it has none.
func (d *ApprovalDecision) RunOwner() string {
	for _, ref := range d.OwnerReferences {
		if ref.Kind == "AgentRun" && ref.APIVersion == GroupVersion.String() {
			return string(ref.UID)
		}
	}
	return ""
}

// ConversationOwnerReference is the owner reference admission gives a
// turn (a run with spec.conversationRef), and the store the turn's
// segments: a plain reference, so that a conversation's segments outlive
// a deleted turn while later turns' transcripts reference them, and go
// with the conversation.
func ConversationOwnerReference(conv *Conversation) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: GroupVersion.String(), Kind: "Conversation", Name: conv.Name, UID: conv.UID}
}

// ConversationOwner is the owner reference of run to the Conversation its
// spec.conversationRef names, when it has one.
func (r *AgentRun) ConversationOwner() (metav1.OwnerReference, bool) {
	ref := r.Spec.ConversationRef
	if ref == nil {
		return metav1.OwnerReference{}, false
	}
	for _, o := range r.OwnerReferences {
		if o.Kind == "Conversation" && o.APIVersion == GroupVersion.String() && o.Name == ref.Name {
			return o, true
		}
	}
	return metav1.OwnerReference{}, false
}

// TurnCreated is when the turn r was admitted: its
// exagent.io/turn-created annotation (nanoseconds), else its
// creationTimestamp (seconds: a turn admitted with the webhook bypassed).
func (r *AgentRun) TurnCreated() time.Time {
	if v, ok := r.Annotations[AnnotationTurnCreated]; ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t
		}
	}
	return r.CreationTimestamp.Time
}
