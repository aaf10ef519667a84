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

// MaxKeepLast bounds retention.keepLast (the marker's Maximum).
const MaxKeepLast = 10000

// RetentionSpec says how long the ended runs of an Agent are kept and where
// their record goes before they are deleted (docs/architecture.md §15). A run is
// deleted when its TTL has passed or when it is no longer among the
// keepLast newest ended runs of its Agent, whichever comes first, and, with
// an archive, only once the archive sink answered 2xx. A child run
// (delegation) is kept as long as its root run and deleted with it.
// +kubebuilder:validation:XValidation:rule="!has(self.archive) || !has(self.archive.format) || self.archive.format == 'CloudEvents'",message="retention.archive is sent as one CloudEvent (io.exagent.run.archived): its format can only be CloudEvents"
// +kubebuilder:validation:XValidation:rule="!has(self.archive) || !has(self.archive.events) || size(self.archive.events) == 0",message="retention.archive is sent one event, io.exagent.run.archived: leave its events empty"
type RetentionSpec struct {
	// ttlSecondsAfterFinished is how long a run of this Agent is kept after
	// it ended, when the run's own spec.ttlSecondsAfterFinished is unset:
	// 0 deletes it as soon as it ended. Unset: the manager's
	// --default-ttl-seconds-after-finished, if any.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// keepLast keeps the newest keepLast ended runs of this Agent (by when
	// they ended) and deletes the older ones, like a CronJob's history
	// limits; 0 keeps none. Unset: no history limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	KeepLast *int32 `json:"keepLast,omitempty"`

	// archive is, when set, sent the run's whole record — spec, final
	// status, the whole transcript read back from its segments, every
	// decision with its actor, reason and receipt — as one CloudEvent
	// io.exagent.run.archived before the run is deleted; the run is
	// deleted only after the sink answered 2xx, and kept (with condition
	// Archived=False) while it does not. Same shape and signature as a
	// spec.notify sink; format CloudEvents, no events.
	// +optional
	Archive *NotifySink `json:"archive,omitempty"`
}

// ArchiveState is where the archive of one run is.
// +kubebuilder:validation:Enum=Pending;Delivered
type ArchiveState string

const (
	// ArchivePending: the sink has not answered 2xx yet; the run is kept
	// and the archive is sent again after a backoff.
	ArchivePending ArchiveState = "Pending"
	// ArchiveDelivered: the sink answered 2xx; the run may be deleted.
	ArchiveDelivered ArchiveState = "Delivered"
)

// ArchiveRecord journals the delivery of a run's archive, like a
// notification record: written after each attempt, so a manager that
// stops after the sink's answer and before this record sends the archive
// again, with the same id.
type ArchiveRecord struct {
	// id of the CloudEvent, the same on every attempt and after a crash:
	// the sink dedupes on it (also the webhook-id header).
	// +required
	// +kubebuilder:validation:MaxLength=160
	ID string `json:"id"`
	// sink is the name of the Agent's retention.archive the last attempt went to.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Sink string `json:"sink"`
	// state of the delivery.
	// +required
	State ArchiveState `json:"state"`
	// attempts made so far.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// firstAttemptAt (UTC): since when the run waits for its archive.
	// +optional
	FirstAttemptAt *metav1.Time `json:"firstAttemptAt,omitempty"`
	// lastAttemptAt (UTC); the next attempt waits for the backoff after it.
	// +optional
	LastAttemptAt *metav1.Time `json:"lastAttemptAt,omitempty"`
	// lastError of the last failed attempt.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	LastError string `json:"lastError,omitempty"`
	// digest (sha256) of the run's content the last attempt sent: its
	// metadata labels and annotations, spec and status but this record and
	// the conditions. A delivered archive covers the run only while the
	// run still has this digest; a run written after it (a late outcome)
	// is archived again, under a new id, before it is deleted.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	Digest string `json:"digest,omitempty"`
}

// Condition type, reasons and Event reason of retention (docs/retention.md).
const (
	// ConditionArchived is set on a run whose retention sent (or tries to
	// send) its archive: True once the sink answered 2xx, False while the
	// run is held for a failing sink.
	ConditionArchived = "Archived"
	// ReasonArchiveDelivered is Archived=True's reason.
	ReasonArchiveDelivered = "ArchiveDelivered"
	// ReasonArchiveSinkFailing is Archived=False's reason, and the reason of
	// the Warning Event sent when an attempt failed: the run is kept, never
	// deleted, until the sink answers 2xx.
	ReasonArchiveSinkFailing = "ArchiveSinkFailing"
	// ReasonRetentionGitOpsManaged is the reason of the Warning Event on a
	// run whose TTL (from its Agent or the manager) or its Agent's keepLast
	// is due but that a GitOps tool manages: retention leaves it, as the
	// next sync would re-create it and run its tool calls again
	// (docs/gitops.md, Retention).
	ReasonRetentionGitOpsManaged = "RetentionGitOpsManaged"
)

// CloudEventArchived is the CloudEvents type of a run's archive.
const CloudEventArchived = "io.exagent.run.archived"
