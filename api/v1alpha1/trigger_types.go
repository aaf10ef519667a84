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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TriggerAuth says how a delivery proves where it comes from: exactly one
// of a Standard Webhooks signing secret (whsec_…) or a bearer token.
// +kubebuilder:validation:XValidation:rule="has(self.signingSecretRef) != has(self.bearerTokenSecretRef)",message="set exactly one of signingSecretRef and bearerTokenSecretRef"
type TriggerAuth struct {
	// signingSecretRef names the Standard Webhooks secret (whsec_ and
	// base64) deliveries are signed with; the webhook-id of each is
	// remembered, so a replay makes no run.
	// +optional
	SigningSecretRef *SecretKeySelector `json:"signingSecretRef,omitempty"`
	// bearerTokenSecretRef names the token deliveries carry as
	// Authorization: Bearer (Alertmanager's http_config.authorization).
	// +optional
	BearerTokenSecretRef *SecretKeySelector `json:"bearerTokenSecretRef,omitempty"`
}

// WebhookTriggerSource: each delivery's JSON body is one event.
type WebhookTriggerSource struct {
	// auth of a delivery.
	// +required
	Auth *TriggerAuth `json:"auth,omitempty"`
	// maxBodyBytes bounds a delivery's body (64 KiB by default).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxBodyBytes *int32 `json:"maxBodyBytes,omitempty"`
}

// AlertmanagerTriggerSource: each firing alert of an Alertmanager
// notification (version 4) is one event, its dedup key its fingerprint
// unless spec.dedupKey says otherwise.
type AlertmanagerTriggerSource struct {
	// auth of a notification.
	// +required
	Auth *TriggerAuth `json:"auth,omitempty"`
	// resolved alerts make runs too when set (firing ones only by default).
	// +optional
	Resolved bool `json:"resolved,omitempty"`
}

// TriggerSource is where a trigger's events come from: exactly one.
// +kubebuilder:validation:XValidation:rule="has(self.webhook) != has(self.alertmanager)",message="set exactly one source: webhook or alertmanager"
type TriggerSource struct {
	// webhook events: POST /triggers/NAMESPACE/NAME on the manager's
	// trigger listener, one event per delivery.
	// +optional
	Webhook *WebhookTriggerSource `json:"webhook,omitempty"`
	// alertmanager notifications, to the same URL as a webhook receiver.
	// +optional
	Alertmanager *AlertmanagerTriggerSource `json:"alertmanager,omitempty"`
}

// AgentTriggerSpec creates runs from events.
type AgentTriggerSpec struct {
	// source of the events.
	// +required
	Source *TriggerSource `json:"source,omitempty"`
	// runTemplate is the runs' spec; its input comes first, the event's
	// rendering (spec.input) after it.
	// +required
	RunTemplate ScheduleRunTemplate `json:"runTemplate"`
	// input is a CEL expression over the event (the variable event) that
	// yields the rest of the run's input, e.g. "Ticket " + event.title.
	// Never a template: the event is attacker input.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Input string `json:"input"`
	// dedupKey is a CEL expression over the event whose value makes at
	// most one run per dedupWindow (default: the delivery's webhook-id,
	// or the alert's fingerprint).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	DedupKey string `json:"dedupKey,omitempty"`
	// dedupWindow allows one run per key per window (10m by default).
	// +optional
	DedupWindow *metav1.Duration `json:"dedupWindow,omitempty"`
	// maxRunsPerHour bounds the runs the trigger makes; events past it
	// are counted and dropped.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxRunsPerHour *int32 `json:"maxRunsPerHour,omitempty"`
	// suspend answers deliveries and makes no run.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// AgentTriggerStatus is what the manager observed of the trigger.
type AgentTriggerStatus struct {
	// conditions are Ready (the secret and expressions are usable).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=atrig,categories=exagent
// +kubebuilder:printcolumn:name="AGENT",type=string,JSONPath=`.spec.runTemplate.agentRef.name`
// +kubebuilder:printcolumn:name="SUSPEND",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// AgentTrigger creates runs from events delivered to the manager's trigger
// listener: a signed webhook or an Alertmanager receiver, deduplicated and
// rate-limited.
type AgentTrigger struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the trigger's object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// spec is where events come from and the runs they make.
	// +required
	Spec AgentTriggerSpec `json:"spec"`
	// status is what the manager observed.
	// +optional
	Status AgentTriggerStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// AgentTriggerList is a list of AgentTriggers.
type AgentTriggerList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the AgentTriggers.
	Items []AgentTrigger `json:"items"`
}

// LabelTrigger labels the runs an AgentTrigger made with its name.
const LabelTrigger = "exagent.io/trigger"
