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

// EventType is a Kubernetes Event's type.
// +kubebuilder:validation:Enum=Normal;Warning
type EventType string

// InvolvedObjectSelector selects Events by the object they are about.
type InvolvedObjectSelector struct {
	// kinds of the involved object, e.g. Pod (any kind when empty).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Kinds []string `json:"kinds,omitempty"`
	// namespaces whose Events are read (the trigger's own when empty);
	// the trigger's ServiceAccount must be allowed to list and watch
	// events in each.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`
	// name of the involved object, e.g. one Deployment (any when empty).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// KubernetesEventsTriggerSource: each Kubernetes Event that matches is
// one event, read as the trigger's ServiceAccount (never as the
// manager); its dedup key is the involved object's namespace, kind and
// name with the Event's reason unless spec.dedupKey says otherwise.
type KubernetesEventsTriggerSource struct {
	// serviceAccountName is the ServiceAccount (in the trigger's
	// namespace) the Events are read as; the person who sets the trigger
	// must be allowed to use it, as for a run's serviceAccountName.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName"`
	// reasons the Event must have one of, e.g. BackOff (any when empty).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=set
	Reasons []string `json:"reasons,omitempty"`
	// types the Event must have one of (any when empty).
	// +optional
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	Types []EventType `json:"types,omitempty"`
	// involvedObject selects the object the Event is about.
	// +optional
	InvolvedObject *InvolvedObjectSelector `json:"involvedObject,omitempty"`
}

// TriggerSource is where a trigger's events come from: exactly one.
// +kubebuilder:validation:XValidation:rule="(has(self.webhook) ? 1 : 0) + (has(self.alertmanager) ? 1 : 0) + (has(self.kubernetesEvents) ? 1 : 0) == 1",message="set exactly one source: webhook, alertmanager or kubernetesEvents"
type TriggerSource struct {
	// webhook events: POST /triggers/NAMESPACE/NAME on the manager's
	// trigger listener, one event per delivery.
	// +optional
	Webhook *WebhookTriggerSource `json:"webhook,omitempty"`
	// alertmanager notifications, to the same URL as a webhook receiver.
	// +optional
	Alertmanager *AlertmanagerTriggerSource `json:"alertmanager,omitempty"`
	// kubernetesEvents are Events of the cluster, read as a ServiceAccount.
	// +optional
	KubernetesEvents *KubernetesEventsTriggerSource `json:"kubernetesEvents,omitempty"`
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
	// maxConcurrentRuns bounds the trigger's runs that have not ended;
	// events past it are counted and dropped, never queued.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxConcurrentRuns *int32 `json:"maxConcurrentRuns,omitempty"`
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
	// activeRuns is how many of its runs have not ended.
	// +optional
	ActiveRuns int32 `json:"activeRuns,omitempty"`
	// counts of the events received since the trigger was created.
	// +optional
	Counts TriggerCounts `json:"counts,omitempty,omitzero"`
	// lastEventTime is when the last event was received.
	// +optional
	LastEventTime *metav1.Time `json:"lastEventTime,omitempty"`
	// lastRunName is the run the trigger made last.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastRunName string `json:"lastRunName,omitempty"`
	// lastRunTime is when it was made.
	// +optional
	LastRunTime *metav1.Time `json:"lastRunTime,omitempty"`
}

// TriggerCounts are what became of a trigger's events, summed over the
// manager's replicas (each adds what it saw; a write whose answer was
// lost may be counted twice).
type TriggerCounts struct {
	// events received (authenticated, parsed).
	// +optional
	Events int64 `json:"events,omitempty"`
	// runs made.
	// +optional
	Runs int64 `json:"runs,omitempty"`
	// duplicates are events whose dedup key made a run within the window.
	// +optional
	Duplicates int64 `json:"duplicates,omitempty"`
	// dropped are events past maxRunsPerHour or maxConcurrentRuns, or
	// received while suspended: counted, never queued.
	// +optional
	Dropped int64 `json:"dropped,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=atrig,categories=exagent
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="AGENT",type=string,JSONPath=`.spec.runTemplate.agentRef.name`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="ACTIVE",type=integer,JSONPath=`.status.activeRuns`
// +kubebuilder:printcolumn:name="RUNS",type=integer,JSONPath=`.status.counts.runs`
// +kubebuilder:printcolumn:name="DROPPED",type=integer,JSONPath=`.status.counts.dropped`
// +kubebuilder:printcolumn:name="LAST RUN",type=date,JSONPath=`.status.lastRunTime`
// +kubebuilder:printcolumn:name="SUSPEND",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// AgentTrigger creates runs from events delivered to the manager's trigger
// listener (a signed webhook or an Alertmanager receiver) or from the
// cluster's Events, deduplicated and rate-limited.
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

// Reasons of a trigger's Ready condition (with ReasonSuspended and
// ReasonNoRequester of schedules).
const (
	// ReasonTriggerReady: the trigger's secret, expressions and setter are
	// usable; events make runs.
	ReasonTriggerReady = "TriggerReady"
	// ReasonSecretUnavailable: the Secret its source's auth names is
	// missing, or has no usable value under the key.
	ReasonSecretUnavailable = "SecretUnavailable"
	// ReasonInvalidExpression: spec.input or spec.dedupKey does not compile.
	ReasonInvalidExpression = "InvalidExpression"
	// ReasonEventsNotWatched: the kubernetesEvents source cannot watch
	// (its ServiceAccount may not list and watch events somewhere).
	ReasonEventsNotWatched = "EventsNotWatched"
)
