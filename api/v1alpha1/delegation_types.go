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

// Delegation records, on a child run, where it sits in its tree. It is
// written by the manager when it creates the child and is immutable with
// the rest of the spec.
type Delegation struct {
	// parent is the run whose call created this one.
	// +required
	Parent RunReference `json:"parent"`
	// root is the top of the tree (the parent, for a direct child).
	// +required
	Root RunReference `json:"root"`
	// callID of the parent's delegation call.
	// +required
	// +kubebuilder:validation:MaxLength=64
	CallID string `json:"callID"`
	// ancestry is the chain of delegating calls from the root down, each
	// "runUID/callID"; its length is the run's depth. Payload hashes cover it.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=atomic
	Ancestry []string `json:"ancestry"`
	// limits are what the parent reserved for the child out of what
	// remained of its own (and so of every ancestor's) limits when the
	// child's call was begun; the child's own Agent limits can only narrow
	// them (active time is bounded by spec.activeTimeLimit).
	// +optional
	Limits DelegatedLimits `json:"limits,omitempty"`
}

// DelegatedLimits are the remains of the ancestors' limits. Unlike an
// Agent's limits they may be 0: nothing of that kind is left.
type DelegatedLimits struct {
	// maxSteps is the most model requests the child may make.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxSteps *int32 `json:"maxSteps,omitempty"`
	// maxToolCalls is the most tool calls the child may start.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxToolCalls *int32 `json:"maxToolCalls,omitempty"`
	// maxTokens is the most model tokens the child may use.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxTokens *int64 `json:"maxTokens,omitempty"`
	// maxDepth is how many more levels of delegation may go below the child.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	MaxDepth *int32 `json:"maxDepth,omitempty"`
	// maxRuns is how many runs the child's own tree (below it) may create.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	MaxRuns *int32 `json:"maxRuns,omitempty"`
}

// RunReference names a run and pins its UID.
type RunReference struct {
	// name is the run's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// uid is the run's UID.
	// +required
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid"`
}

// ChildRun is a delegated run, as its parent mirrors it. The entry is
// journaled with the delegation call's intent, before the child is
// created, under the child's deterministic name: whatever becomes of the
// call, the parent knows which run to end. uid is empty until the parent
// recorded that the child exists.
type ChildRun struct {
	// name of the child run.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// uid of the child run: usage is charged once per UID.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid,omitempty"`
	// callID of the delegation call the child answers.
	// +required
	// +kubebuilder:validation:MaxLength=64
	CallID string `json:"callID"`
	// agent the child runs.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Agent string `json:"agent,omitempty"`
	// phase of the child as last observed.
	// +optional
	Phase RunPhase `json:"phase,omitempty"`
	// pendingApprovals in the child and its own descendants.
	// +optional
	PendingApprovals int32 `json:"pendingApprovals,omitempty"`
	// message of the child as last observed (what it waits for).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// reserved is what this run set aside of its budget for the child, in
	// the commit of the delegation call's intent (before the child is
	// created): the child's limits. This run and its other children may
	// not spend it until the child ended; then the child's actual usage is
	// charged instead.
	// +optional
	Reserved *DelegatedLimits `json:"reserved,omitempty"`
	// charged is true once the child's usage was added to this run's
	// ledger and its reservation released — also for a child that was never
	// created, or was deleted (nothing of it is known to charge).
	// +optional
	Charged bool `json:"charged,omitempty"`
}
