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

// TurnPolicy says who takes the next turn of a conversation.
// +kubebuilder:validation:Enum=Explicit;RoundRobin
type TurnPolicy string

const (
	// TurnExplicit: each turn is an AgentRun someone creates, naming its
	// participant (the conversation's agentRef by default).
	TurnExplicit TurnPolicy = "Explicit"
	// TurnRoundRobin: the controller creates the next turn itself, the
	// participants in order, until maxTurns or a participant ends it.
	TurnRoundRobin TurnPolicy = "RoundRobin"
)

// DoubleText says what a turn created while another is open does.
// +kubebuilder:validation:Enum=Enqueue;Reject;Interrupt
type DoubleText string

const (
	// DoubleTextEnqueue: the new turn waits, Queued (WaitingForTurn), for
	// every earlier turn to end.
	DoubleTextEnqueue DoubleText = "Enqueue"
	// DoubleTextReject: admission refuses the new turn, naming the open one.
	DoubleTextReject DoubleText = "Reject"
	// DoubleTextInterrupt: the open turn is cancelled (a call in flight
	// becomes Uncertain and still blocks the queue until resolved), then
	// the new turn runs.
	DoubleTextInterrupt DoubleText = "Interrupt"
)

// FollowUps says who may add a turn to a conversation.
// +kubebuilder:validation:Enum=SameRequester;Approvers;Anyone
type FollowUps string

const (
	// FollowUpsSameRequester: only the person who started the conversation
	// (its first turn's requester). Continuing someone's conversation
	// reads its whole history.
	FollowUpsSameRequester FollowUps = "SameRequester"
	// FollowUpsApprovers: the first requester, and who may approve runs
	// of the conversation's Agent.
	FollowUpsApprovers FollowUps = "Approvers"
	// FollowUpsAnyone: anyone who may create AgentRuns in the namespace.
	FollowUpsAnyone FollowUps = "Anyone"
)

// MaxParticipants bounds spec.participants.
const MaxParticipants = 16

// MaxConversationTurns bounds spec.limits.maxTurns.
const MaxConversationTurns = 1000

// MaxListedTurns bounds status.turns: the newest turns only.
const MaxListedTurns = 20

// Participant is one party of a conversation: an Agent, or people whose
// turn is a question they answer.
// +kubebuilder:validation:XValidation:rule="has(self.agentRef) != has(self.human)",message="a participant is an agentRef or a human, exactly one"
type Participant struct {
	// name of the participant in the conversation (a turn names it).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// agentRef names the participant's Agent (same namespace).
	// +optional
	AgentRef *LocalObjectReference `json:"agentRef,omitempty"`
	// human names the people whose turn this is: their turn is a question
	// (AskHuman) they answer with kubectl approve answer.
	// +optional
	Human *Approvers `json:"human,omitempty"`
}

// ConversationLimits bound a conversation across its turns.
type ConversationLimits struct {
	// maxTurns is the most turns the conversation takes; a turn past it
	// is refused at admission (RoundRobin stops there).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxTurns *int32 `json:"maxTurns,omitempty"`
	// maxTokens bounds the prompt and completion tokens of all its turns.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxTokens *int64 `json:"maxTokens,omitempty"`
}

// ConversationSpec is a long-lived conversation whose turns are AgentRuns.
// +kubebuilder:validation:XValidation:rule="self.turnPolicy != 'RoundRobin' || has(self.limits) && has(self.limits.maxTurns)",message="turnPolicy RoundRobin needs spec.limits.maxTurns: the controller creates turns until it (or a participant ends the conversation)"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.forkOf) == has(self.forkOf) && (!has(self.forkOf) || oldSelf.forkOf == self.forkOf)",message="spec.forkOf is immutable: a branch's history is fixed when it starts"
type ConversationSpec struct {
	// agentRef is the default participant: a turn that names no Agent of
	// its own runs this one.
	// +required
	AgentRef LocalObjectReference `json:"agentRef"`
	// participants are the parties that take turns (optional: the
	// agentRef alone otherwise).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Participants []Participant `json:"participants,omitempty"`
	// turnPolicy says who takes the next turn. Explicit by default.
	// +optional
	// +kubebuilder:default=Explicit
	TurnPolicy TurnPolicy `json:"turnPolicy,omitempty"`
	// doubleText says what a turn created while another is open does.
	// Enqueue by default.
	// +optional
	// +kubebuilder:default=Enqueue
	DoubleText DoubleText `json:"doubleText,omitempty"`
	// followUps says who may add a turn. SameRequester by default.
	// +optional
	// +kubebuilder:default=SameRequester
	FollowUps FollowUps `json:"followUps,omitempty"`
	// limits bound the conversation across its turns.
	// +optional
	Limits ConversationLimits `json:"limits,omitempty,omitzero"`
	// suspend starts no new turn; a turn in flight goes on.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// endMarker ends the conversation, when set, once a turn's final
	// answer contains it (as the builtin EndConversation tool does): no
	// turn is added after it, and RoundRobin stops.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	EndMarker string `json:"endMarker,omitempty"`
	// forkOf makes this conversation a branch of another: its first turn
	// continues that conversation's turns 1..turn, and nothing after them
	// is visible to it or replayed. Immutable.
	// +optional
	ForkOf *ConversationFork `json:"forkOf,omitempty"`
	// retention says how long the conversation is kept once idle: every
	// turn, segment and decision goes with it, archived first to its
	// agentRef Agent's retention.archive sink when it has one. Unset:
	// its agentRef Agent's retention.ttl, then the manager's default; the
	// Agent's keepLast counts a conversation as one.
	// +optional
	Retention ConversationRetention `json:"retention,omitempty,omitzero"`
}

// ConversationFork names where a branch starts.
type ConversationFork struct {
	// name of the Conversation forked (same namespace).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// turn is the last turn of it the branch continues (from 1).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Turn int32 `json:"turn"`
}

// ConversationRetention says how long an idle conversation is kept.
type ConversationRetention struct {
	// ttl after its newest turn ended (no turn open): the conversation is
	// deleted with every turn.
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
}

// ConversationPhase is where a conversation stands.
// +kubebuilder:validation:Enum=Idle;Running;AwaitingApproval;Uncertain;Suspended;Ended
type ConversationPhase string

const (
	ConversationIdle             ConversationPhase = "Idle"
	ConversationRunning          ConversationPhase = "Running"
	ConversationAwaitingApproval ConversationPhase = "AwaitingApproval"
	ConversationUncertain        ConversationPhase = "Uncertain"
	ConversationSuspended        ConversationPhase = "Suspended"
	ConversationEnded            ConversationPhase = "Ended"
)

// Turn is one turn of a conversation, as the conversation's status lists it.
type Turn struct {
	// index is the turn's place in the conversation, from 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	Index int32 `json:"index"`
	// run is the AgentRun of the turn.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Run string `json:"run"`
	// participant that took the turn (its Agent's name when the
	// conversation lists no participants).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Participant string `json:"participant,omitempty"`
	// phase of the turn's run.
	// +optional
	Phase RunPhase `json:"phase,omitempty"`
}

// ConversationStatus is what the controller observed of the turns.
type ConversationStatus struct {
	// conditions are Ready (False once the conversation Ended) and Ended.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is where the conversation stands: Running while a turn runs,
	// AwaitingApproval or Uncertain while one waits on a person, Idle
	// between turns, Suspended, Ended.
	// +optional
	Phase ConversationPhase `json:"phase,omitempty"`
	// turns in order: the newest MaxListedTurns (turnCount counts them
	// all; the turns themselves are the AgentRuns labelled
	// exagent.io/conversation). Bounded, so a status write costs the same
	// at turn 1,000 as at turn 1.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	Turns []Turn `json:"turns,omitempty"`
	// turnCount is how many turns the conversation has.
	// +optional
	TurnCount int32 `json:"turnCount,omitempty"`
	// open is the turn that holds the queue: the earliest turn that has
	// not ended (a paused or Uncertain one included).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Open string `json:"open,omitempty"`
	// queued is how many turns wait behind the open one.
	// +optional
	Queued int32 `json:"queued,omitempty"`
	// ledger sums the ledgers of the turns.
	// +optional
	Ledger Ledger `json:"ledger,omitempty,omitzero"`
	// lastTurnEndedAt is when the newest turn ended (retention counts
	// from it).
	// +optional
	LastTurnEndedAt *metav1.Time `json:"lastTurnEndedAt,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=conv,categories=exagent
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="AGENT",type=string,JSONPath=`.spec.agentRef.name`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="OPEN",type=string,JSONPath=`.status.open`
// +kubebuilder:printcolumn:name="QUEUED",type=integer,JSONPath=`.status.queued`
// +kubebuilder:printcolumn:name="TURNS",type=integer,JSONPath=`.status.turnCount`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// Conversation is a long-lived conversation: follow-up prompts are turns
// (AgentRuns naming it in spec.conversationRef), run one at a time in
// order; a paused or Uncertain turn blocks the queue.
type Conversation struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the Conversation's object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the conversation's parties and rules.
	// +required
	Spec ConversationSpec `json:"spec"`
	// status is what the controller observed of its turns.
	// +optional
	Status ConversationStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// ConversationList is a list of Conversations.
type ConversationList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Conversations.
	Items []Conversation `json:"items"`
}

// ConversationRef names the conversation a run is a turn of.
type ConversationRef struct {
	// name of the Conversation (same namespace).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// participant taking the turn, by its name in the conversation's
	// spec.participants: an Agent participant (spec.agentRef is then
	// set to its Agent) or a human one, whose turn is a question its
	// people answer (kubectl approve answer). Empty: the participant
	// spec.agentRef names.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Participant string `json:"participant,omitempty"`
}

// Reasons of a conversation's turns.
const (
	// ReasonWaitingForTurn: a turn waits, Queued, for an earlier turn of
	// its conversation to end (a paused or Uncertain one included).
	ReasonWaitingForTurn = "WaitingForTurn"
	// ReasonConversationNotFound: the turn's Conversation does not exist;
	// the turn waits, Queued, until it does.
	ReasonConversationNotFound = "ConversationNotFound"
	// ReasonConversationSuspended: the conversation is suspended; its next
	// turn waits, Queued, until spec.suspend is false again.
	ReasonConversationSuspended = "ConversationSuspended"
	// ReasonInterrupted: a turn was ended by a newer turn of its
	// conversation (doubleText Interrupt), as a cancel ends a run.
	ReasonInterrupted = "Interrupted"
	// ReasonConversationIdle: no turn is open; the next one starts at once.
	ReasonConversationIdle = "Idle"
	// ReasonConversationEnded: the conversation took its maxTurns, or a
	// participant ended it (EndConversation, spec.endMarker).
	ReasonConversationEnded = "ConversationEnded"
	// ReasonForkNotFound: the conversation's spec.forkOf names a
	// conversation or turn that does not exist (or has not ended).
	ReasonForkNotFound = "ForkNotFound"
)

// How a turn ended its conversation (TurnStatus.EndedConversation).
const (
	EndedByTool   = "EndConversation"
	EndedByMarker = "EndMarker"
)

// TurnStatus is a turn's place in its conversation.
type TurnStatus struct {
	// index is the turn's place, from 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	Index int32 `json:"index"`
	// after is the turn whose transcript this one continues (empty for
	// the first turn).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	After string `json:"after,omitempty"`
	// afterUID is that turn's UID.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AfterUID string `json:"afterUID,omitempty"`
	// firstMessage is the number, in the logical transcript, of the
	// turn's own user message: what comes before it is earlier turns'.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FirstMessage int64 `json:"firstMessage,omitempty"`
	// participant taking the turn.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Participant string `json:"participant,omitempty"`
	// human is set on a human participant's turn: a question its people
	// answer; the answer is the turn's message.
	// +optional
	Human bool `json:"human,omitempty"`
	// endMarker is the conversation's spec.endMarker when the turn
	// started: a final answer containing it ends the conversation.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	EndMarker string `json:"endMarker,omitempty"`
	// endedConversation says the turn ended its conversation:
	// EndConversation (the builtin tool) or EndMarker.
	// +optional
	// +kubebuilder:validation:Enum=EndConversation;EndMarker
	EndedConversation string `json:"endedConversation,omitempty"`
}
