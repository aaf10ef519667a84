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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DecisionKind is what a decider decided.
// +kubebuilder:validation:Enum=Approve;Deny;Cancel;Resolve;Answer
type DecisionKind string

const (
	DecisionApprove DecisionKind = "Approve"
	DecisionDeny    DecisionKind = "Deny"
	DecisionCancel  DecisionKind = "Cancel"
	DecisionResolve DecisionKind = "Resolve"
	// DecisionAnswer answers a question (an approval of kind Question).
	DecisionAnswer DecisionKind = "Answer"
)

// AnswerAction is what the person did with a question (MCP's three
// actions of an elicitation).
// +kubebuilder:validation:Enum=Accept;Decline;Cancel
type AnswerAction string

const (
	// AnswerAccept gives the answer (spec.answer).
	AnswerAccept AnswerAction = "Accept"
	// AnswerDecline refuses to answer; the asker is told.
	AnswerDecline AnswerAction = "Decline"
	// AnswerCancel dismisses the question without a choice; the asker is told.
	AnswerCancel AnswerAction = "Cancel"
)

// ResolveOutcome is the evidence-backed outcome of an Uncertain call.
// +kubebuilder:validation:Enum=Succeeded;Failed;Retry
type ResolveOutcome string

const (
	ResolveSucceeded ResolveOutcome = "Succeeded"
	ResolveFailed    ResolveOutcome = "Failed"
	// ResolveRetry re-sends the call with the same Idempotency-Key.
	ResolveRetry ResolveOutcome = "Retry"
)

// DecisionPhase is the result of applying a decision.
// +kubebuilder:validation:Enum=Applied;Rejected
type DecisionPhase string

const (
	DecisionApplied  DecisionPhase = "Applied"
	DecisionRejected DecisionPhase = "Rejected"
)

// DecisionScope is what an Approve covers.
// +kubebuilder:validation:Enum=Call;Run
type DecisionScope string

const (
	// ScopeCall approves the one call (the default).
	ScopeCall DecisionScope = "Call"
	// ScopeRun also lets later calls of the same tool in the same run, asked
	// by the same rule, run without asking while the tool's binding and the
	// policy are unchanged.
	ScopeRun DecisionScope = "Run"
)

// ApprovalDecisionSpec is one decision. It is immutable, and consistent
// with its decision: arguments and scope only with Approve, action only
// with Answer, outcome only with Resolve, which needs an outcome and a
// callID; Approve, Deny and Answer need an approvalID. The validating
// webhook checks a new decision's shape; the ValidatingAdmissionPolicy
// exagent-approvaldecision-spec (config/policy) refuses any change of it —
// not CEL rules of the CRD, which would run at each of the manager's
// writes of the decision too.
type ApprovalDecisionSpec struct {
	// runRef names the AgentRun (same namespace).
	// +required
	RunRef LocalObjectReference `json:"runRef"`

	// approvalID the decision is for (Approve, Deny; optional for Cancel).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ApprovalID string `json:"approvalID,omitempty"`

	// callID of the Uncertain call (Resolve).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CallID string `json:"callID,omitempty"`

	// decision taken.
	// +required
	Decision DecisionKind `json:"decision"`

	// revision of the run the decider saw.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Revision int64 `json:"revision,omitempty"`

	// payloadHash of the call the decider saw.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PayloadHash string `json:"payloadHash,omitempty"`

	// runUID is the UID of the run the decider saw. A run deleted and
	// re-created under the same name — even with a call of the same
	// approval ID — is another run: admission and the controller refuse
	// a decision whose runUID is not the run's. The plugin and the page
	// always send it; a decision written by hand (GitOps) may omit it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RunUID string `json:"runUID,omitempty"`

	// operationID makes the decision idempotent; defaults to the object's name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	OperationID string `json:"operationID,omitempty"`

	// reason given by the decider; shown to the model on a deny with onDeny Continue.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Reason string `json:"reason,omitempty"`

	// outcome of the Uncertain call (Resolve only).
	// +optional
	Outcome ResolveOutcome `json:"outcome,omitempty"`

	// evidence for the outcome (Resolve only).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Evidence string `json:"evidence,omitempty"`

	// arguments (Approve only) are the call's arguments as the approver
	// edited them, a JSON object: they are validated against the tool's
	// schema, the policy is evaluated on them again, and the call runs with
	// exactly these. The run journals them beside the model's.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Arguments *runtime.RawExtension `json:"arguments,omitempty"`

	// scope (Approve only) is Call (the default: this call) or Run (also
	// later calls of the same tool in this run that the same rule asks about,
	// while the tool's binding and the policy are unchanged).
	// +optional
	Scope DecisionScope `json:"scope,omitempty"`

	// answer (Answer only) is the answer to a question, any JSON value
	// (a string for a free-text question): it is validated against the
	// question's schema. Required with action Accept, refused otherwise.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Answer *runtime.RawExtension `json:"answer,omitempty"`

	// action (Answer only) is Accept (the default: spec.answer is the
	// answer), Decline or Cancel (no answer; the asker is told).
	// +optional
	Action AnswerAction `json:"action,omitempty"`

	// actor is stamped by the admission webhook from the authenticated user.
	// +optional
	Actor *Actor `json:"actor,omitempty"`
}

// ApprovalDecisionStatus is the result of applying the decision.
type ApprovalDecisionStatus struct {
	// phase is Applied or Rejected.
	// +optional
	Phase DecisionPhase `json:"phase,omitempty"`
	// message explains the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
	// receipt written into the run.
	// +optional
	Receipt *Receipt `json:"receipt,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ad,categories=exagent
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="DECISION",type=string,JSONPath=`.spec.decision`
// +kubebuilder:printcolumn:name="RUN",type=string,JSONPath=`.spec.runRef.name`
// +kubebuilder:printcolumn:name="ACTOR",type=string,JSONPath=`.spec.actor.username`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.status.message`,priority=1

// ApprovalDecision is one immutable human (or GitOps) decision on a run.
type ApprovalDecision struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the decision's object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the decision: its run, its target, its verdict. Immutable
	// (the ValidatingAdmissionPolicy exagent-approvaldecision-spec).
	// +required
	Spec ApprovalDecisionSpec `json:"spec"`
	// status says whether the decision was applied, and why not.
	// +optional
	Status ApprovalDecisionStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ApprovalDecisionList is a list of ApprovalDecisions.
type ApprovalDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApprovalDecision `json:"items"`
}

// Who may decide (docs/architecture.md §2): a decision is authorized by RBAC on a
// virtual subresource of the run's Agent, like a CSR's "approve" on
// signers — no endpoint serves it, RBAC alone grants it, and a Role can
// name one Agent with resourceNames.
const (
	// ApprovalResource and ApprovalSubresource name it: agents/approval.
	ApprovalResource    = "agents"
	ApprovalSubresource = "approval"
	// VerbApprove is needed to approve, deny or cancel (ClusterRole
	// exagent-approver grants it).
	VerbApprove = "approve"
	// VerbResolve is needed to resolve an Uncertain call (ClusterRole
	// exagent-resolver grants it).
	VerbResolve = "resolve"
	// VerbAnswer is needed to answer a question (ClusterRole
	// exagent-approver grants it; a Role may grant it alone).
	VerbAnswer = "answer"
)

// DeciderVerb returns the RBAC verb on agents/approval a decision of kind needs.
func DeciderVerb(kind DecisionKind) string {
	switch kind {
	case DecisionResolve:
		return VerbResolve
	case DecisionAnswer:
		return VerbAnswer
	}
	return VerbApprove
}

// RunRecreated says why a decision bound to the run with UID saw cannot
// apply to the run of the same name whose UID is now: the decider looked
// at another run. Admission and the controller refuse it in these words.
func RunRecreated(saw, now string) string {
	return fmt.Sprintf("the run was re-created since you looked (uid %s, now %s): reload / kubectl approve show again", saw, now)
}

// StaleRunUID returns RunRecreated's message when the spec names a run
// UID other than uid, "" when it names none or the same one.
func (s *ApprovalDecisionSpec) StaleRunUID(uid string) string {
	if s.RunUID == "" || s.RunUID == uid {
		return ""
	}
	return RunRecreated(s.RunUID, uid)
}

// Verb returns the RBAC verb on agents/approval the decision needs.
func (s *ApprovalDecisionSpec) Verb() string { return DeciderVerb(s.Decision) }

// EditedArguments returns spec.arguments as JSON text ("" when unset).
func (s *ApprovalDecisionSpec) EditedArguments() string {
	if s.Arguments == nil {
		return ""
	}
	return string(s.Arguments.Raw)
}

// AnswerJSON returns spec.answer as JSON text ("" when unset).
func (s *ApprovalDecisionSpec) AnswerJSON() string {
	if s.Answer == nil {
		return ""
	}
	return string(s.Answer.Raw)
}
