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

// RunPhase is where a run is in its state machine (docs/architecture.md §3).
// +kubebuilder:validation:Enum=Queued;Running;AwaitingApproval;Approved;Waiting;Succeeded;Failed;Denied;Cancelled;Expired;Uncertain
type RunPhase string

// Stage is the part of a step the cursor is at.
// +kubebuilder:validation:Enum=Request;Batch;Finish
type Stage string

// CallState is the journal state of one tool call.
// +kubebuilder:validation:Enum=Proposed;Allowed;Pending;Approved;Denied;Refused;Started;Succeeded;Failed;Uncertain
type CallState string

// ApprovalState is the state of one approval request.
// +kubebuilder:validation:Enum=Pending;Approved;Denied;Cancelled;Expired;Answered
type ApprovalState string

// ApprovalKind says what a request for a human asks for.
// +kubebuilder:validation:Enum=Approval;Question
type ApprovalKind string

// QuestionSource says who asks a question.
// +kubebuilder:validation:Enum=AskHuman;MCPElicitation;MCPElicitationURL;MCPSampling;Participant
type QuestionSource string

// CallInput is an MCP server's input requests for a call (MCP 2026-07-28:
// a tools/call answered with resultType input_required) and, once every
// one is answered, the responses the call is retried with.
type CallInput struct {
	// round counts the server's input_required answers to this call.
	// +required
	// +kubebuilder:validation:Minimum=1
	Round int32 `json:"round"`
	// requests are the server's inputRequests (canonical JSON; untrusted).
	// +required
	// +kubebuilder:validation:MaxLength=16384
	Requests string `json:"requests"`
	// requestState is the server's opaque state, echoed on the retry.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	RequestState string `json:"requestState,omitempty"`
	// responses are the inputResponses (canonical JSON) the call is retried
	// with, once every request is answered.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Responses string `json:"responses,omitempty"`
	// samples are the run's model's answers to the server's sampling
	// requests (canonical JSON: request id → CreateMessageResult), each a
	// model request of the run's ledger.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Samples string `json:"samples,omitempty"`
}

// Question is what a request of kind Question asks, and its answer.
type Question struct {
	// source of the question.
	// +required
	Source QuestionSource `json:"source"`
	// text of the question, as the asker wrote it (untrusted text).
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Text string `json:"text"`
	// choices the asker offered, if any.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	Choices []string `json:"choices,omitempty"`
	// schema is the JSON Schema (canonical JSON) every answer must match.
	// +required
	// +kubebuilder:validation:MaxLength=16384
	Schema string `json:"schema"`
	// url (MCPElicitationURL) the person is asked to visit; never fetched
	// by the manager.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`
	// requestID is the MCP server's id of the input request (MCP sources).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	RequestID string `json:"requestID,omitempty"`
	// action the person took once answered: Accept, Decline or Cancel.
	// +optional
	Action AnswerAction `json:"action,omitempty"`
	// answer given (canonical JSON), with action Accept.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Answer string `json:"answer,omitempty"`
	// answerers are who may answer instead of the Agent's
	// policy.approvers, when set: a conversation's human participant
	// (source Participant), journaled when the question is asked.
	// +optional
	Answerers *Approvers `json:"answerers,omitempty"`
}

// MessageRole is the author of a transcript message.
// +kubebuilder:validation:Enum=system;user;assistant;tool
type MessageRole string

// AgentRunSpec is what to run. It is immutable after creation.
type AgentRunSpec struct {
	// agentRef names the Agent (same namespace). A missing Agent is not an
	// error: the run waits with Ready=False, reason AgentNotFound.
	// +required
	AgentRef LocalObjectReference `json:"agentRef"`

	// input is the user message that starts the run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Input string `json:"input"`

	// deadline (UTC) after which the run ends Expired, human waits included.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`

	// approvalTimeout after which each pending approval expires (default 24h; Never disables).
	// +optional
	ApprovalTimeout Duration `json:"approvalTimeout,omitempty"`

	// activeTimeLimit bounds the time a process owns the run; unset takes
	// the Agent's limits.activeTime, and with neither there is no limit
	// (Never says so explicitly). Human waiting is not charged. A finite
	// limit is a hard cap: each claim reserves the whole remaining balance
	// and a crashed owner's reservation is charged whole.
	// +optional
	ActiveTimeLimit Duration `json:"activeTimeLimit,omitempty"`

	// leaseDuration of a claim (default 30s; admission refuses less than 5s,
	// and Never); a run whose lease expired is recovered.
	// +optional
	LeaseDuration Duration `json:"leaseDuration,omitempty"`

	// serviceAccountName the builtin tools impersonate (default "default").
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// requestedBy is stamped by the admission webhook from the creating user.
	// +optional
	RequestedBy *Actor `json:"requestedBy,omitempty"`

	// ttlSecondsAfterFinished is how long the run is kept after it ended
	// (from its Ended condition's lastTransitionTime); 0 deletes it as soon
	// as it ended. The run is deleted with its segments and decisions,
	// archived first when its Agent has retention.archive. Unset: the
	// Agent's retention.ttlSecondsAfterFinished, then the manager's
	// --default-ttl-seconds-after-finished; with none of them the run is
	// kept. Ignored on a child run, which is kept as long as its root.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// delegation is set by the manager on a child run it created for a
	// delegation call of its parent (delegation_types.go); admission refuses
	// it from anyone else.
	// +optional
	Delegation *Delegation `json:"delegation,omitempty"`

	// conversationRef makes the run a turn of a Conversation (same
	// namespace): turns run one at a time in order, and a turn created
	// while an earlier one is open waits Queued (reason WaitingForTurn).
	// +optional
	ConversationRef *ConversationRef `json:"conversationRef,omitempty"`
}

// AgentRunStatus is the single durable record of a run: snapshot, journal
// and receipts. It is written only by compare-and-swap.
type AgentRunStatus struct {
	// conditions are a view computed from the journal, one per type, and
	// only those that say something: Ready and Ended always, Succeeded once
	// the run ended, AwaitingApproval, Uncertain, Reconciling and Stalled
	// only while True (an absent condition reads as False). The
	// status around them is atomic for server-side apply (see Status), so
	// no field ownership is tracked per condition.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase of the run.
	// +optional
	Phase RunPhase `json:"phase,omitempty"`

	// reason is a PascalCase word for the last phase change (ScriptExhausted, LimitExceeded, …).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// message explains reason to a person.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// formatVersion is the format of this journal (docs/upgrading.md). The
	// manager reads every format a release wrote, writes only its own, and
	// leaves a run written in a newer format untouched but for its Ready
	// condition (reason UnknownFormat). Unset is format 1: the journal of
	// v0.3.0 and of every release before this field.
	// +optional
	// +kubebuilder:validation:Minimum=1
	FormatVersion int32 `json:"formatVersion,omitempty"`

	// revision is bumped at every pause; approvals bind it.
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// startedAt is when the run was first claimed: the window of an
	// AgentBudget (tokens per UTC day, cost per UTC month) it is charged to.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// attempts counts the claims ever made; the next claim's attempt is
	// attempts+1, so a fence is never reused after a claim is released.
	// +optional
	Attempts int64 `json:"attempts,omitempty"`

	// pendingApprovals counts approvals in state Pending.
	// +optional
	PendingApprovals int32 `json:"pendingApprovals,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the markers of Binding
	// are documentation here, not enforcement — the apiserver does not check
	// them; the manager bounds what it writes (loop/bounds.go).

	// binding holds fingerprints of the configuration the run started with.
	// +optional
	Binding *Binding `json:"binding,omitempty"`

	// claim is the current owner's lease; nil when no process owns the run.
	// +optional
	Claim *Claim `json:"claim,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the markers of Cursor
	// are documentation here, not enforcement — the apiserver does not check
	// them; the manager bounds what it writes (loop/bounds.go).

	// cursor is where the run is.
	// +optional
	Cursor Cursor `json:"cursor,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the markers of
	// TranscriptHead are documentation here, not enforcement — the apiserver
	// does not check them; the manager bounds what it writes (loop/bounds.go).

	// transcript is the head of the run's sealed transcript: what is no
	// longer in history (older messages, past steps' calls and approvals,
	// large values) lives in AgentRunSegments chained from it (docs/architecture.md §10).
	// +optional
	Transcript *TranscriptHead `json:"transcript,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the apiserver checks
	// only this list's maxItems. The markers of Message are documentation, not
	// enforcement here; the manager bounds what it writes (loop/bounds.go).

	// history is the tail of the logical transcript sent to the model; the
	// messages before it are in the segments transcript points to.
	// +optional
	// +kubebuilder:validation:MaxItems=4096
	// +listType=atomic
	History []Message `json:"history,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the apiserver checks
	// only this list's maxItems. The markers of ToolCall are documentation,
	// not enforcement here; the manager bounds what it writes
	// (loop/bounds.go).

	// calls is the tool-call journal.
	// +optional
	// +kubebuilder:validation:MaxItems=4096
	// +listType=atomic
	Calls []ToolCall `json:"calls,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the apiserver checks
	// only this list's maxItems. The markers of Approval are documentation,
	// not enforcement here; the manager bounds what it writes
	// (loop/bounds.go).

	// approvals requested of humans.
	// +optional
	// +kubebuilder:validation:MaxItems=4096
	// +listType=atomic
	Approvals []Approval `json:"approvals,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the apiserver checks
	// only this list's maxItems. The markers of Receipt are documentation, not
	// enforcement here; the manager bounds what it writes (loop/bounds.go).

	// receipts of applied decisions, for idempotency.
	// +optional
	// +kubebuilder:validation:MaxItems=4096
	// +listType=atomic
	Receipts []Receipt `json:"receipts,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the apiserver checks
	// only this list's maxItems. The markers of RunGrant are documentation,
	// not enforcement here; the manager bounds what it writes
	// (loop/bounds.go).

	// grants are the run-wide approvals (decisions with scope Run) in force.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Grants []RunGrant `json:"grants,omitempty"`

	// ledger counts usage exactly once.
	// +optional
	Ledger Ledger `json:"ledger,omitempty"`

	// limits are the limits the run holds, journaled from its Agent (and
	// spec.delegation.limits, spec.activeTimeLimit) at its first claim: an
	// Agent edit may narrow a running run, never widen it — the run is
	// bound by the stricter of these and its Agent's current limits
	// (docs/architecture.md §4.7). Unset until the run is first claimed.
	// +optional
	Limits *RunLimits `json:"limits,omitempty"`

	// turn is, on a turn of a conversation, its place and the turn whose
	// transcript it continues, journaled once when the turn may start
	// (every earlier turn ended): its history is that turn's by reference.
	// +optional
	Turn *TurnStatus `json:"turn,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the apiserver checks
	// only this list's maxItems. The markers of ChildRun are documentation,
	// not enforcement here; the manager bounds what it writes
	// (loop/bounds.go).

	// children are delegated runs.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	Children []ChildRun `json:"children,omitempty"`

	// output is the final answer of a Succeeded run.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Output string `json:"output,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the markers of ValueRef
	// are documentation here, not enforcement — the apiserver does not check
	// them; the manager bounds what it writes (loop/bounds.go).

	// outputRef points to the whole final answer when it is too large for
	// the hot status; output then holds its beginning.
	// +optional
	OutputRef *ValueRef `json:"outputRef,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the apiserver checks
	// only this list's maxItems. The markers of NotificationRecord are
	// documentation, not enforcement here; the manager bounds what it writes
	// (loop/bounds.go).

	// notifications journals the deliveries to the Agent's notify sinks
	// (notify_types.go): recorded Pending in the commit that makes the
	// event true, so a crash re-sends and never forgets.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Notifications []NotificationRecord `json:"notifications,omitempty"`

	// callbacks journals the callback URLs the run's NewCallback calls
	// made (wait_types.go), and the first valid POST each received: a POST
	// that arrives before a WaitForCallback call waits for it is kept here,
	// not lost.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Callbacks []RunCallback `json:"callbacks,omitempty"`

	// Schemaless in the CRD (SchemalessStatusFields): the markers of
	// ArchiveRecord are documentation here, not enforcement — the apiserver
	// does not check them; the manager bounds what it writes (loop/bounds.go).

	// archive journals the delivery of the run's record to its Agent's
	// retention.archive before retention deletes it (retention_types.go).
	// +optional
	Archive *ArchiveRecord `json:"archive,omitempty"`

	// traceparent (W3C) of the run's trace: every attempt's span joins it.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Traceparent string `json:"traceparent,omitempty"`
}

// TranscriptHead is where the sealed part of a run's transcript is: the
// last segment of the chain and what the chain holds.
type TranscriptHead struct {
	// head is the name (the content hash) of the last segment; empty when
	// nothing is sealed yet.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Head string `json:"head,omitempty"`
	// segments is the length of the chain.
	// +optional
	Segments int32 `json:"segments,omitempty"`
	// messages is how many transcript messages the chain holds: history[0]
	// is message number `messages` of the logical transcript.
	// +optional
	Messages int64 `json:"messages,omitempty"`
	// calls is how many journal entries of past steps the chain holds.
	// +optional
	Calls int64 `json:"calls,omitempty"`
	// receipts is how many receipts of decisions at past revisions the
	// chain holds: a decision whose operation is not in status.receipts
	// is looked up there when it is not zero.
	// +optional
	Receipts int64 `json:"receipts,omitempty"`
	// bytes is the size of the sealed messages (content and tool
	// arguments, sealed values included); with the tail in history it is
	// what limits.maxTranscriptBytes bounds.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// segmentBytes is the size of the segments' content written so far.
	// +optional
	SegmentBytes int64 `json:"segmentBytes,omitempty"`
	// baseSegments is, on a turn of a conversation, how many of the
	// chain's first segments are the earlier turns' — taken by reference
	// when the turn started, never copied.
	// +optional
	BaseSegments int32 `json:"baseSegments,omitempty"`
	// baseHead is the last of the base's segments: pinned by its content
	// hash, which covers every segment before it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	BaseHead string `json:"baseHead,omitempty"`
}

// ValueRef points to a value (a message's content, a call's args or
// result) sealed into an AgentRunSegment of the run's chain.
type ValueRef struct {
	// segment is the name (content hash) of the segment that holds the value.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Segment string `json:"segment"`
	// sha256 of the value.
	// +required
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`
	// bytes is the value's length.
	// +required
	Bytes int64 `json:"bytes"`
}

// Binding holds fingerprints (sha256 of canonical JSON) of the run's configuration.
type Binding struct {
	// agentGeneration the run bound to.
	// +optional
	AgentGeneration int64 `json:"agentGeneration,omitempty"`
	// definition fingerprint: instructions and tool inventory.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Definition string `json:"definition,omitempty"`
	// model fingerprint: provider, name, baseURL, script.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Model string `json:"model,omitempty"`
	// policy fingerprint.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Policy string `json:"policy,omitempty"`
	// tools fingerprints, one per tool: its schema and what its calls do
	// (http url, idempotent and header Secret names; builtin operation and
	// kinds; mcp server and tool; delegation target).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Tools []ToolFingerprint `json:"tools,omitempty"`
}

// ToolFingerprint is the fingerprint of one tool's schema and effect configuration.
type ToolFingerprint struct {
	// name is the tool's name.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// hash is the fingerprint of the tool's schema and effect configuration.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Hash string `json:"hash"`
}

// Claim is the lease of the process that owns the run.
type Claim struct {
	// holder identifies the owning process.
	// +required
	// +kubebuilder:validation:MaxLength=256
	Holder string `json:"holder"`
	// attempt increases with every claim; every commit checks it (the fence).
	// +required
	Attempt int64 `json:"attempt"`
	// leaseExpiresAt after which the run may be recovered by another process.
	// +required
	LeaseExpiresAt metav1.MicroTime `json:"leaseExpiresAt"`
	// claimedAt is when this attempt (or its last checkpoint) began.
	// +optional
	ClaimedAt *metav1.MicroTime `json:"claimedAt,omitempty"`
}

// Cursor is the run's position: step and stage.
type Cursor struct {
	// step counts model turns, starting at 0.
	// +optional
	Step int32 `json:"step"`
	// stage within the step.
	// +optional
	Stage Stage `json:"stage,omitempty"`
	// modelRequest is the intent of an in-flight model request.
	// +optional
	ModelRequest *ModelRequestIntent `json:"modelRequest,omitempty"`
	// modelFailures counts consecutive failed model requests; a response resets it.
	// +optional
	ModelFailures int32 `json:"modelFailures,omitempty"`
	// modelResends counts the re-sends, in this step, of a model request
	// whose answer was lost (its owner crashed, lost its lease or stopped
	// before committing it); a response resets it. Past a bound the run
	// ends Failed (ModelRequestRetriesExhausted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	ModelResends int32 `json:"modelResends,omitempty"`
}

// ModelRequestIntent records that a model request was committed before it was sent.
type ModelRequestIntent struct {
	// attempt of the claim that sent it.
	// +required
	Attempt int64 `json:"attempt"`
	// request is the ledger's request number this request was charged as.
	// +required
	Request int64 `json:"request"`
	// callID is the MCP call whose sampling request this request answers,
	// when it is one (not a turn of the run).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	CallID string `json:"callID,omitempty"`
	// inputRequest is the id of that sampling request.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	InputRequest string `json:"inputRequest,omitempty"`
}

// Message is one transcript entry.
type Message struct {
	// role of the author.
	// +required
	Role MessageRole `json:"role"`
	// content of the message.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Content string `json:"content,omitempty"`
	// contentRef points to the content when it was sealed into a segment
	// (content is then empty).
	// +optional
	ContentRef *ValueRef `json:"contentRef,omitempty"`
	// toolCalls the assistant asked for.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	ToolCalls []MessageToolCall `json:"toolCalls,omitempty"`
	// toolCallID a tool message answers.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ToolCallID string `json:"toolCallID,omitempty"`
}

// MessageToolCall is a tool call inside an assistant message.
type MessageToolCall struct {
	// id is the call's id, as the model gave it.
	// +required
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// name is the tool called.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// arguments as JSON text.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Arguments string `json:"arguments,omitempty"`
	// argumentsRef points to the arguments when they were sealed into a
	// segment (arguments is then empty).
	// +optional
	ArgumentsRef *ValueRef `json:"argumentsRef,omitempty"`
}

// ToolCall is one journal entry of a tool call.
type ToolCall struct {
	// id of the call (the model's tool-call id).
	// +required
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// step the call belongs to.
	// +required
	Step int32 `json:"step"`
	// tool name.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Tool string `json:"tool"`
	// args as canonical JSON text.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Args string `json:"args,omitempty"`
	// argsRef points to the args when they were sealed into a segment
	// (args is then empty; argsHash still covers them).
	// +optional
	ArgsRef *ValueRef `json:"argsRef,omitempty"`
	// argsHash is sha256 of the canonical args.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ArgsHash string `json:"argsHash,omitempty"`
	// payloadHash binds schema, args, fingerprints and ancestry; approvals bind it.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PayloadHash string `json:"payloadHash,omitempty"`
	// idempotencyKey sent with the effect (run UID + call id).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// state of the call.
	// +required
	State CallState `json:"state"`
	// rule is the policy rule that decided (empty for the default).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Rule string `json:"rule,omitempty"`
	// policy is the fingerprint of the policy the call was last decided
	// under (binding.policy at that time): with rule, what allowed, asked
	// about or refused it.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Policy string `json:"policy,omitempty"`
	// grant is the ApprovalDecision whose run-wide approval (scope Run) let
	// this call run without asking.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Grant string `json:"grant,omitempty"`
	// edit records that an approver edited the call before approving it:
	// args, argsHash and payloadHash are then the edited call's, and edit
	// keeps the model's.
	// +optional
	Edit *CallEdit `json:"edit,omitempty"`
	// attempt of the claim that committed the intent.
	// +optional
	Attempt int64 `json:"attempt,omitempty"`
	// startedAt is when the intent was committed.
	// +optional
	StartedAt *metav1.MicroTime `json:"startedAt,omitempty"`
	// resends counts automatic re-sends (same idempotency key) of a call to an
	// idempotent tool whose outcome was lost.
	// +optional
	Resends int32 `json:"resends,omitempty"`
	// mcp is, for a call of an mcp tool, the server and the tool's
	// annotations as its tools/list gave them when the policy last
	// evaluated the call (what an approver is shown; they are part of the
	// payload hash through the tool's fingerprint).
	// +optional
	MCP *CallMCP `json:"mcp,omitempty"`
	// input is what an MCP server asked for to complete the call (an
	// input_required result), and the answers it is retried with.
	// +optional
	Input *CallInput `json:"input,omitempty"`
	// child is, for a call of an agent tool, the child run created as its
	// effect: the call stays Started while the child works (it is not IO in
	// flight) and its outcome is the child's end.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Child string `json:"child,omitempty"`
	// wait is, for a call of a builtin that waits (Sleep, WaitFor,
	// WaitForCallback), what it waits for and until when: the call stays
	// Started while it waits (it is not IO in flight) and the run is
	// Waiting once nothing else is left.
	// +optional
	Wait *CallWait `json:"wait,omitempty"`
	// outcome once confirmed.
	// +optional
	Outcome *CallOutcome `json:"outcome,omitempty"`
}

// WaitKind is what a waiting call waits for.
// +kubebuilder:validation:Enum=Timer;Object;Callback
type WaitKind string

// CallWait is what a waiting call waits for, journaled when the wait began.
type CallWait struct {
	// kind of the wait.
	// +required
	Kind WaitKind `json:"kind"`
	// duration is the wait the call asked for (Go duration string).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Duration string `json:"duration,omitempty"`
	// since is when the wait began.
	// +required
	Since metav1.MicroTime `json:"since"`
	// until is when the wait ends at the latest: since plus the shortest of
	// the duration (or timeout) asked for, limits.maxWait and what is left
	// before the run's deadline.
	// +required
	Until metav1.MicroTime `json:"until"`
	// object is, for kind Object, the object waited on and the condition.
	// +optional
	Object *WaitedObject `json:"object,omitempty"`
	// callback is, for kind Callback, the id of the callback waited for
	// (status.callbacks).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Callback string `json:"callback,omitempty"`
}

// CallEdit is the model's version of a call an approver edited.
type CallEdit struct {
	// modelArgs are the arguments as the model proposed them (canonical JSON).
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	ModelArgs string `json:"modelArgs,omitempty"`
	// modelArgsRef points to them when they were sealed into a segment.
	// +optional
	ModelArgsRef *ValueRef `json:"modelArgsRef,omitempty"`
	// modelArgsHash is sha256 of the model's canonical arguments.
	// +required
	// +kubebuilder:validation:MaxLength=128
	ModelArgsHash string `json:"modelArgsHash"`
	// modelPayloadHash is the payload hash of the model's call.
	// +required
	// +kubebuilder:validation:MaxLength=128
	ModelPayloadHash string `json:"modelPayloadHash"`
	// editor is who edited the call.
	// +required
	Editor Actor `json:"editor"`
	// approvalID is the approval the edit was made in.
	// +required
	// +kubebuilder:validation:MaxLength=64
	ApprovalID string `json:"approvalID"`
}

// CallMCP is what an approver is shown of an mcp call's server and tool.
// The hints come from the server, which the Agent does not control: they
// never make a call allowed or idempotent by themselves.
type CallMCP struct {
	// server is the MCP server's URL.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	Server string `json:"server"`
	// tool is the server's name of the tool.
	// +required
	// +kubebuilder:validation:MaxLength=256
	Tool string `json:"tool"`
	// title is the tool's title annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`
	// The four hints below carry the MCP spec's defaults where the server
	// gave none.

	// readOnlyHint is the tool's readOnlyHint annotation.
	// +required
	ReadOnlyHint bool `json:"readOnlyHint"`
	// destructiveHint is the tool's destructiveHint annotation.
	// +required
	DestructiveHint bool `json:"destructiveHint"`
	// idempotentHint is the tool's idempotentHint annotation.
	// +required
	IdempotentHint bool `json:"idempotentHint"`
	// openWorldHint is the tool's openWorldHint annotation.
	// +required
	OpenWorldHint bool `json:"openWorldHint"`
}

// CallOutcome is the confirmed result of a tool call.
type CallOutcome struct {
	// succeeded is true for a success; false for a failure the model sees.
	// +required
	Succeeded bool `json:"succeeded"`
	// result (success) or error excerpt (failure) shown to the model.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Result string `json:"result,omitempty"`
	// resultRef points to the result when it was sealed into a segment
	// (result is then empty).
	// +optional
	ResultRef *ValueRef `json:"resultRef,omitempty"`
	// resolvedBy is set when a human's Resolve decision supplied the outcome.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ResolvedBy string `json:"resolvedBy,omitempty"`
	// evidence the resolver gave for the outcome.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Evidence string `json:"evidence,omitempty"`
	// at is when the outcome was confirmed.
	// +optional
	At *metav1.MicroTime `json:"at,omitempty"`
}

// Approval is one request for a human decision on one call.
type Approval struct {
	// id of the approval.
	// +required
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// kind is Approval (a yes or no; the default) or Question (an answer).
	// +optional
	Kind ApprovalKind `json:"kind,omitempty"`
	// callID the approval is for.
	// +required
	// +kubebuilder:validation:MaxLength=64
	CallID string `json:"callID"`
	// question asked (kind Question), and its answer.
	// +optional
	Question *Question `json:"question,omitempty"`
	// payloadHash the decision must carry.
	// +required
	// +kubebuilder:validation:MaxLength=128
	PayloadHash string `json:"payloadHash"`
	// revision the decision must carry.
	// +required
	Revision int64 `json:"revision"`
	// state of the approval.
	// +required
	State ApprovalState `json:"state"`
	// rule is the policy rule that asked.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Rule string `json:"rule,omitempty"`
	// requestedAt (UTC).
	// +required
	RequestedAt metav1.Time `json:"requestedAt"`
	// expiresAt (UTC); unset when approvalTimeout is Never.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// decision applied (Approve, Deny, Cancel).
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Decision string `json:"decision,omitempty"`
	// actor who decided.
	// +optional
	Actor *Actor `json:"actor,omitempty"`
	// reason the decider gave.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Reason string `json:"reason,omitempty"`
	// quorum the approval needs, from the rule that asked; unset: one approval.
	// +optional
	Quorum *Quorum `json:"quorum,omitempty"`
	// votes are the approvals given so far under a quorum, one per distinct
	// approver.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Votes []Vote `json:"votes,omitempty"`
	// edit is the edited call the approval stands for once an approver
	// edited it: every later vote must be on this version (its payloadHash).
	// Under a quorum only the first vote may edit: an edit after votes
	// were cast is refused, so no voter's yes is carried over to arguments
	// they did not see.
	// +optional
	Edit *ApprovalEdit `json:"edit,omitempty"`
	// scope is Run when the approval also covers later calls of the tool
	// in this run (status.grants).
	// +optional
	Scope DecisionScope `json:"scope,omitempty"`
	// notified lists the notifications of this approval (ApprovalRequested,
	// ApprovalExpiring) journaled for every notify sink that wants them:
	// what is still due is read from here, so a delivered record may leave
	// the bounded journal without being sent again.
	// +optional
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	Notified []NotifyEvent `json:"notified,omitempty"`
}

// Vote is one approver's Approve under a quorum.
type Vote struct {
	// actor who voted.
	// +required
	Actor Actor `json:"actor"`
	// operationID of the vote's decision.
	// +required
	// +kubebuilder:validation:MaxLength=253
	OperationID string `json:"operationID"`
	// at is when the vote was counted (UTC).
	// +required
	At metav1.Time `json:"at"`
	// scope the voter chose (Run: approve for the rest of the run).
	// +optional
	Scope DecisionScope `json:"scope,omitempty"`
	// payloadHash is the version of the call the vote approves: the
	// model's (the approval's payloadHash) or the edited one
	// (edit.payloadHash). Only votes on the version that will run count
	// toward the quorum; a vote journaled before this field existed reads
	// as cast on the model's version.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PayloadHash string `json:"payloadHash,omitempty"`
}

// ApprovalEdit is the edited version of a call an approval stands for.
type ApprovalEdit struct {
	// args are the edited arguments (canonical JSON) while the approval
	// waits for more votes; once it is decided the call holds them.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Args string `json:"args,omitempty"`
	// argsHash is sha256 of the edited canonical arguments.
	// +required
	// +kubebuilder:validation:MaxLength=128
	ArgsHash string `json:"argsHash"`
	// payloadHash of the edited call: what the approval now binds.
	// +required
	// +kubebuilder:validation:MaxLength=128
	PayloadHash string `json:"payloadHash"`
	// editor is who edited the call.
	// +required
	Editor Actor `json:"editor"`
}

// RunGrant is a run-wide approval (a decision with scope Run): later calls
// of tool that rule asks about run without asking while the tool's
// fingerprint and the policy's are the ones recorded here.
type RunGrant struct {
	// tool the grant covers.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Tool string `json:"tool"`
	// rule that asked (empty for the default).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Rule string `json:"rule,omitempty"`
	// toolFingerprint is the tool's fingerprint (schema and effect) when granted.
	// +required
	// +kubebuilder:validation:MaxLength=128
	ToolFingerprint string `json:"toolFingerprint"`
	// policy is the policy's fingerprint when granted.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Policy string `json:"policy"`
	// decision is the ApprovalDecision that granted it (its name, else its
	// operationID).
	// +required
	// +kubebuilder:validation:MaxLength=253
	Decision string `json:"decision"`
	// approvalID the grant was given in.
	// +required
	// +kubebuilder:validation:MaxLength=64
	ApprovalID string `json:"approvalID"`
	// actors who granted it (several under a quorum).
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Actors []Actor `json:"actors"`
}

// Receipt is the durable record of an applied decision.
type Receipt struct {
	// operationID of the decision.
	// +required
	// +kubebuilder:validation:MaxLength=253
	OperationID string `json:"operationID"`
	// decisionName is the ApprovalDecision object.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DecisionName string `json:"decisionName,omitempty"`
	// decision applied.
	// +required
	// +kubebuilder:validation:MaxLength=16
	Decision string `json:"decision"`
	// target is the approvalID or callID the decision targeted.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Target string `json:"target,omitempty"`
	// payloadHash the decision carried.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PayloadHash string `json:"payloadHash,omitempty"`
	// revision the decision carried.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// actor who decided.
	// +optional
	Actor *Actor `json:"actor,omitempty"`
	// appliedAt (UTC).
	// +optional
	AppliedAt *metav1.Time `json:"appliedAt,omitempty"`
	// outcome of a Resolve decision.
	// +optional
	Outcome ResolveOutcome `json:"outcome,omitempty"`
	// argsHash of the edited arguments an Approve carried.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ArgsHash string `json:"argsHash,omitempty"`
	// scope of an Approve (Run: approved for the rest of the run).
	// +optional
	Scope DecisionScope `json:"scope,omitempty"`
	// answerHash of an Answer: sha256 of its action and answer.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	AnswerHash string `json:"answerHash,omitempty"`
}

// Ledger counts usage exactly once across pause, resume and recovery.
type Ledger struct {
	// requests is the number of model requests sent (re-sent ones included).
	// +optional
	Requests int64 `json:"requests,omitempty"`
	// toolCalls is the number of tool calls admitted.
	// +optional
	ToolCalls int64 `json:"toolCalls,omitempty"`
	// promptTokens used.
	// +optional
	PromptTokens int64 `json:"promptTokens,omitempty"`
	// completionTokens used.
	// +optional
	CompletionTokens int64 `json:"completionTokens,omitempty"`
	// cacheCreationTokens is the part of promptTokens written to the
	// provider's prompt cache (Anthropic: billed at 1.25×).
	// +optional
	CacheCreationTokens int64 `json:"cacheCreationTokens,omitempty"`
	// cacheReadTokens is the part of promptTokens read from the
	// provider's prompt cache (Anthropic: billed at 0.1×).
	// +optional
	CacheReadTokens int64 `json:"cacheReadTokens,omitempty"`
	// runs is how many child runs were created below this run, at every
	// depth (charged when each child ended); limits.maxRuns bounds it.
	// +optional
	Runs int64 `json:"runs,omitempty"`
	// childRequests is the part of requests its child runs made (charged
	// when each ended): limits.maxSteps counts them with the run's own steps.
	// +optional
	ChildRequests int64 `json:"childRequests,omitempty"`
	// samplingRequests is the part of requests that answered MCP sampling
	// requests (each counted once, not its re-sends): limits.maxSteps
	// counts them with the run's own steps.
	// +optional
	SamplingRequests int64 `json:"samplingRequests,omitempty"`
	// costNanos is the cost of the run's model responses, in billionths
	// of the currency of its Agent's model.pricing, each charged once when
	// the response is recorded at the prices of that moment (0 without
	// pricing), its child runs' included as for tokens.
	// +optional
	CostNanos int64 `json:"costNanos,omitempty"`
	// childTokens is the part of promptTokens and completionTokens its
	// child runs used (charged when each ended): an AgentBudget counts a
	// run's own tokens, each child's with the child's own Agent.
	// +optional
	ChildTokens int64 `json:"childTokens,omitempty"`
	// childCostNanos is the part of costNanos its child runs used.
	// +optional
	ChildCostNanos int64 `json:"childCostNanos,omitempty"`
	// activeTimeUsed is charged owner time.
	// +optional
	ActiveTimeUsed metav1.Duration `json:"activeTimeUsed,omitempty"`
	// activeTimeReserved is held by the current claim.
	// +optional
	ActiveTimeReserved metav1.Duration `json:"activeTimeReserved,omitempty"`
}

// RunLimits are the limits a run holds (status.limits): its Agent's
// limits narrowed by what its ancestors reserved for it, and its active
// time, as they were when the run was first claimed. An unset field
// bounds nothing.
type RunLimits struct {
	// maxSteps is the most model requests the run may make.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxSteps *int32 `json:"maxSteps,omitempty"`
	// maxToolCalls is the most tool calls the run may start.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxToolCalls *int32 `json:"maxToolCalls,omitempty"`
	// maxTokens is the most model tokens the run may use.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxTokens *int64 `json:"maxTokens,omitempty"`
	// maxRuns is how many runs the run's delegation tree may create.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	MaxRuns *int32 `json:"maxRuns,omitempty"`
	// maxDepth is how many levels of delegation may go below the run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	MaxDepth *int32 `json:"maxDepth,omitempty"`
	// activeTime is the active-time limit; unset: none.
	// +optional
	ActiveTime *metav1.Duration `json:"activeTime,omitempty"`
	// maxWait is the longest one wait of the run may last (limits.maxWait);
	// unset: no bound but the deadline.
	// +optional
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ar,categories=exagent
// +kubebuilder:deprecatedversion:warning="exagent.io/v1alpha1 AgentRun is deprecated; use exagent.io/v1beta1 AgentRun (docs/upgrading.md)"
// +kubebuilder:printcolumn:name="AGENT",type=string,JSONPath=`.spec.agentRef.name`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="STEP",type=integer,JSONPath=`.status.cursor.step`
// +kubebuilder:printcolumn:name="PENDING",type=integer,JSONPath=`.status.pendingApprovals`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:selectablefield:JSONPath=`.status.phase`
// +kubebuilder:selectablefield:JSONPath=`.spec.agentRef.name`

// AgentRun is one durable run of an Agent. Its phase and its Agent's name
// are selectable fields, so a client asks the apiserver for the runs it
// shows (`kubectl get agentruns --field-selector status.phase=AwaitingApproval`)
// instead of reading every run of a namespace.
type AgentRun struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the run's object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the run does: its Agent, its input, its limits. Immutable:
	// the ValidatingAdmissionPolicy exagent-agentrun-spec (config/policy)
	// and the validating webhook refuse a change, and the manager starts no
	// IO for a run whose spec changed anyway (Ready=False, reason
	// SpecChanged). Not a CEL rule of the CRD, which would run on every
	// status write too.
	// +required
	Spec AgentRunSpec `json:"spec"`
	// status is the single durable record of the run. It defaults to
	// observedGeneration 0, so a run no controller has seen yet reads as in
	// progress to kstatus (generation 1 not observed) rather than as a
	// resource without status, which kstatus calls Current.
	//
	// Atomic for server-side apply: only the manager writes the status,
	// always whole and by CAS, so tracking the ownership of each of its
	// fields in managedFields bought nothing and made every status write
	// of a paused run about 1.4× dearer for the apiserver (measured; see
	// docs/sizing.md, "What a status write costs").
	// +optional
	// +structType=atomic
	// +kubebuilder:default={observedGeneration: 0}
	Status AgentRunStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// AgentRunList is a list of AgentRuns.
type AgentRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentRun `json:"items"`
}
