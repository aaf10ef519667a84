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

// ConcurrencyPolicy says what a tick does while an earlier run of the
// schedule has not ended.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

const (
	// ConcurrencyAllow: the tick creates its run anyway (as a Kubernetes
	// CronJob's default).
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
	// ConcurrencyForbid: the tick is skipped (an Event and status say so).
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyReplace: the running run is cancelled, as a cancel does
	// (a call in flight becomes Uncertain, never repeated), and the tick's
	// run created.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// Labels and annotations of schedules and their runs.
const (
	// LabelSchedule is set on every run a schedule creates (and on the
	// manual runs kubectl approve schedule run creates) to the schedule's
	// name.
	LabelSchedule = "exagent.io/schedule"
	// AnnotationScheduledTime is set on a schedule's run to the tick it
	// was created for (RFC 3339, UTC); absent on a manual run.
	AnnotationScheduledTime = "exagent.io/scheduled-time"
	// AnnotationSpecSetBy is stamped by admission on an AgentSchedule with
	// the person (an Actor as JSON) who last set its spec; its runs are
	// requested by them.
	AnnotationSpecSetBy = "exagent.io/spec-set-by"
	// AnnotationSpecSetBySignature carries the webhook's signature of a
	// schedule's spec and its AnnotationSpecSetBy
	// (authz.Signer.SignSchedule): a setter nobody stamped is refused.
	AnnotationSpecSetBySignature = "exagent.io/spec-set-by-seal"
	// AnnotationReplacedBy is set by the schedule controller on a run a
	// newer run of a Replace schedule replaces: the run controller then
	// cancels it (controllers/agentrun_schedule.go).
	AnnotationReplacedBy = "exagent.io/replaced-by"
)

// Reasons of schedules and of the runs they cancel.
const (
	// ReasonReplaced: a run was cancelled by a newer run of its schedule
	// (concurrencyPolicy Replace).
	ReasonReplaced = "Replaced"
	// ReasonScheduled: the schedule is valid and waits for its next tick.
	ReasonScheduled = "Scheduled"
	// ReasonSuspended: spec.suspend is true.
	ReasonSuspended = "Suspended"
	// ReasonInvalidSchedule: spec.schedule or spec.timeZone does not parse.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonNoRequester: the schedule carries no admission-stamped setter,
	// so its runs would act for nobody.
	ReasonNoRequester = "NoRequester"
	// ReasonRunRefused: admission refused the run of the latest tick (the
	// message says why); the tick is skipped and the next one tries again.
	ReasonRunRefused = "RunRefused"
)

// ScheduleRunTemplate is the part of an AgentRun spec a schedule's runs
// take. requestedBy is the schedule's setter (never written here);
// deadline, delegation and conversationRef have no meaning for a run that
// starts on a clock.
type ScheduleRunTemplate struct {
	// agentRef names the Agent (same namespace).
	// +required
	AgentRef LocalObjectReference `json:"agentRef"`

	// input is the user message that starts each run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Input string `json:"input"`

	// approvalTimeout of each run's approvals (AgentRun spec.approvalTimeout).
	// +optional
	ApprovalTimeout Duration `json:"approvalTimeout,omitempty"`

	// activeTimeLimit of each run (AgentRun spec.activeTimeLimit).
	// +optional
	ActiveTimeLimit Duration `json:"activeTimeLimit,omitempty"`

	// leaseDuration of each run's claims (AgentRun spec.leaseDuration).
	// +optional
	LeaseDuration Duration `json:"leaseDuration,omitempty"`

	// serviceAccountName the runs' builtin tools impersonate (default
	// "default"); setting the schedule's spec needs the right to use it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// ttlSecondsAfterFinished of each run (AgentRun spec.ttlSecondsAfterFinished).
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// RunSpec is the AgentRun spec of a run of the template, requested by by.
func (t *ScheduleRunTemplate) RunSpec(by *Actor) AgentRunSpec {
	spec := AgentRunSpec{
		AgentRef:           t.AgentRef,
		Input:              t.Input,
		ApprovalTimeout:    t.ApprovalTimeout,
		ActiveTimeLimit:    t.ActiveTimeLimit,
		LeaseDuration:      t.LeaseDuration,
		ServiceAccountName: t.ServiceAccountName,
	}
	if t.TTLSecondsAfterFinished != nil {
		v := *t.TTLSecondsAfterFinished
		spec.TTLSecondsAfterFinished = &v
	}
	if by != nil {
		spec.RequestedBy = by.DeepCopy()
	}
	return spec
}

// MaxScheduleNameLength bounds an AgentSchedule's name so that its runs'
// names (NAME-<unix minutes>, NAME-manual-<random>) fit a label value.
const MaxScheduleNameLength = 50

// AgentScheduleSpec is when and what to run.
type AgentScheduleSpec struct {
	// schedule is a cron expression of 5 fields (minute hour day-of-month
	// month day-of-week) or one of @yearly, @monthly, @weekly, @daily,
	// @hourly.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// timeZone is the IANA time zone the schedule is read in (default UTC),
	// e.g. Europe/Berlin; daylight saving changes follow it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// runTemplate is what each run asks for.
	// +required
	RunTemplate ScheduleRunTemplate `json:"runTemplate"`

	// concurrencyPolicy says what a tick does while an earlier run has not
	// ended: Allow (default, as a CronJob), Forbid or Replace.
	// +optional
	// +kubebuilder:default=Allow
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// startingDeadlineSeconds is how late a tick may still start (a tick
	// missed while the manager was down); a later one is skipped. Unset:
	// only the most recent missed tick runs, however late.
	// +optional
	// +kubebuilder:validation:Minimum=0
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// suspend stops new ticks; runs already created go on.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// successfulRunsHistoryLimit is how many ended successful runs are kept
	// (default 3).
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`

	// failedRunsHistoryLimit is how many ended runs that did not succeed
	// are kept (default 1).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`
}

// MaxScheduleActive bounds status.active.
const MaxScheduleActive = 100

// AgentScheduleStatus is what the controller observed and did.
type AgentScheduleStatus struct {
	// conditions say whether the schedule ticks (Ready), and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastScheduleTime is the latest tick a run was created for.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is the next tick.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// active are the schedule's runs that have not ended.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	Active []string `json:"active,omitempty"`

	// activeCount is the number of runs in active.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ActiveCount int32 `json:"activeCount,omitempty"`

	// lastRun is the newest run the schedule created.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastRun string `json:"lastRun,omitempty"`

	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=asched,categories=exagent
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="an AgentSchedule's name is at most 50 characters: its runs are named NAME-<unix minutes> and NAME-manual-<random>"
// +kubebuilder:printcolumn:name="SCHEDULE",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="SUSPEND",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="ACTIVE",type=integer,JSONPath=`.status.activeCount`
// +kubebuilder:printcolumn:name="LAST",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="NEXT",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// AgentSchedule creates an AgentRun on a clock (DESIGN §19): at most one
// per tick, named from the tick, requested by the person who last set the
// schedule's spec.
type AgentSchedule struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the schedule's object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is when and what to run.
	// +required
	Spec AgentScheduleSpec `json:"spec"`
	// status is what the controller observed and did.
	// +optional
	Status AgentScheduleStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// AgentScheduleList contains a list of AgentSchedule.
type AgentScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the schedules.
	Items []AgentSchedule `json:"items"`
}
