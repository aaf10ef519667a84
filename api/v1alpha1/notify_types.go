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

// NotifyFormat is the body a notification sink receives.
// +kubebuilder:validation:Enum=CloudEvents;Slack
type NotifyFormat string

// NotifyEvent is something a person may need to act on.
// +kubebuilder:validation:Enum=ApprovalRequested;InputRequested;ApprovalExpiring;RunUncertain;RunEnded
type NotifyEvent string

// NotifySink is an HTTP endpoint told about a run's events. Deliveries are
// at least once, with a stable id to dedupe on (the CloudEvents id and the
// webhook-id header), retried with backoff, and journaled in the run's
// status.notifications.
type NotifySink struct {
	// name identifies the sink in the runs' delivery journal.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// url the notification is POSTed to (http or https).
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`

	// format of the body: CloudEvents (default) or Slack.
	// +optional
	Format NotifyFormat `json:"format,omitempty"`

	// events to send; every event when empty.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +listType=set
	Events []NotifyEvent `json:"events,omitempty"`

	// signingSecretRef selects an HMAC-SHA256 key; with it every request
	// carries Standard Webhooks webhook-id, webhook-timestamp and
	// webhook-signature headers. A value "whsec_<base64>" is decoded, any
	// other value is the key's bytes.
	// +optional
	SigningSecretRef *SecretKeySelector `json:"signingSecretRef,omitempty"`
}

// NotificationState is where one notification to one sink is.
// +kubebuilder:validation:Enum=Pending;Delivered;Failed;Superseded
type NotificationState string

// NotificationRecord journals one notification to one sink.
type NotificationRecord struct {
	// id of the notification, the same for every sink and every attempt:
	// receivers dedupe on it.
	// +required
	// +kubebuilder:validation:MaxLength=160
	ID string `json:"id"`
	// event announced.
	// +required
	Event NotifyEvent `json:"event"`
	// subject of the event: the approval id, the attempt that lost an
	// outcome, or the phase the run ended in.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Subject string `json:"subject"`
	// sink is the name of the Agent's notify entry.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Sink string `json:"sink"`
	// state of the delivery.
	// +required
	State NotificationState `json:"state"`
	// at is when the event became true (UTC).
	// +required
	At metav1.Time `json:"at"`
	// attempts made so far.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// lastAttemptAt (UTC); the next attempt waits for the backoff after it.
	// +optional
	LastAttemptAt *metav1.Time `json:"lastAttemptAt,omitempty"`
	// lastError of a failed attempt.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	LastError string `json:"lastError,omitempty"`
}
