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

package loop

// This file is the contract between the engine and its callers (controllers,
// model providers, tools). Signatures here are stable; see the functions'
// own files for what each transition touches.

import (
	"encoding/json"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Status is the engine's state: the run's durable status.
type Status = exagentv1.AgentRunStatus

// Fence identifies the claim a caller believes it holds. Every transition
// made on behalf of an owner checks it against Status.Claim and the lease.
type Fence struct {
	Holder  string
	Attempt int64
}

// ActionKind is what the caller must do next.
type ActionKind string

const (
	// ActCallModel: send Action.Model (its intent is already in the state).
	ActCallModel ActionKind = "CallModel"
	// ActRunTools: run Action.Calls (their intents are already in the state).
	ActRunTools ActionKind = "RunTools"
	// ActPause: the run paused for Action.Approvals (claim released).
	ActPause ActionKind = "Pause"
	// ActFinish: the run Succeeded with Action.Output.
	ActFinish ActionKind = "Finish"
	// ActFail: the run ended (Failed, Denied, Uncertain, …) with Action.Reason.
	ActFail ActionKind = "Fail"
	// ActWait: IO is in flight; nothing to do until a result is recorded.
	ActWait ActionKind = "Wait"
	// ActAwaitChildren: the run released its claim while its child runs
	// work (delegate.go); their ends move it on.
	ActAwaitChildren ActionKind = "AwaitChildren"
	// ActHold: the run was handed back between two steps, Queued, because
	// an AgentBudget is used up (budget.go); nothing to do.
	ActHold ActionKind = "Hold"
	// ActWaitUntil: the run released its claim and is Waiting (wait.go);
	// Wake at Action.WakeAt moves it on.
	ActWaitUntil ActionKind = "WaitUntil"
)

// Action is the driver's answer: what the caller must do after it commits
// the state returned alongside it. Intent is recorded before IO, so the
// caller commits first and dispatches the IO only when the commit succeeded.
type Action struct {
	Kind      ActionKind
	Model     *ModelRequest
	Calls     []ToolInvocation
	Approvals []exagentv1.Approval
	Output    string
	Reason    string
	Message   string
	// WakeAt is, for ActWaitUntil, the earliest end of a wait.
	WakeAt time.Time
}

// ToolDef is a tool as the model sees it.
type ToolDef struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments (an object schema).
	Parameters json.RawMessage
}

// ModelRequest is one model request built from the transcript.
type ModelRequest struct {
	// Step is the model turn; the Scripted provider replays script[Step].
	Step int32
	// Request is the ledger's number for this request (1-based).
	Request int64
	// Messages is the transcript's tail in status; with Sealed set, the
	// messages sealed into the run's segments come before it, and messages
	// may point to sealed values (contentRef, argumentsRef): the caller
	// reads the chain and resolves them before the request is sent.
	Messages []exagentv1.Message
	// Sealed is the transcript head when part of it is in segments.
	Sealed *exagentv1.TranscriptHead
	// Instructions, with Sealed set, replace the leading system message
	// of the whole transcript once the caller read it (LeadWith): a later
	// turn of a conversation runs under its own Agent's instructions
	// (conversation_handoff.go). Without Sealed they are in Messages.
	Instructions *string
	Tools        []ToolDef
	// Sampling marks a request that answers an MCP server's sampling
	// request (mcpsample.go): Messages are the server's, no tools are
	// offered, and the Scripted provider answers it from the last message.
	Sampling bool
	// MaxTokens, when positive, caps the response's tokens below the
	// model's own setting (a sampling request's maxTokens).
	MaxTokens int64
}

// ModelResponse is what a provider returned.
type ModelResponse struct {
	Content          string
	ToolCalls        []exagentv1.MessageToolCall
	PromptTokens     int64
	CompletionTokens int64
	// CacheCreationTokens and CacheReadTokens are the part of
	// PromptTokens the provider wrote to and read from its prompt cache
	// (Anthropic): billed differently, counted apart in the ledger.
	CacheCreationTokens int64
	CacheReadTokens     int64
	// PriorCallIDs are the tool-call ids the whole transcript already
	// holds, sealed segments included: the caller fills it from the
	// request it sent, so a model that reuses an id of a sealed step gets a
	// fresh one (ids key idempotency).
	PriorCallIDs map[string]bool
}

// ToolInvocation is one tool call to execute.
type ToolInvocation struct {
	CallID         string
	Tool           string
	Args           json.RawMessage
	IdempotencyKey string
	// Attempt is the claim attempt that committed the intent.
	Attempt int64
	// InputRound, InputResponses and RequestState retry an MCP call the
	// server answered with input requests (mcpinput.go): the round being
	// answered, the responses (JSON) and the server's opaque state.
	InputRound     int32
	InputResponses json.RawMessage
	RequestState   string
}

// ResultKind classifies a tool call's outcome.
type ResultKind string

const (
	// ResultSucceeded: the effect happened; Output is the result.
	ResultSucceeded ResultKind = "Succeeded"
	// ResultFailed: the tool refused or failed cleanly; the model sees Output.
	ResultFailed ResultKind = "Failed"
	// ResultUnknown: the request may have had its effect; the call becomes Uncertain.
	ResultUnknown ResultKind = "Unknown"
	// ResultInputRequired: an MCP server answered that it needs input from
	// a person first (InputRequests, RequestState); nothing happened yet.
	ResultInputRequired ResultKind = "InputRequired"
)

// ToolResult is what a tool returned for one invocation.
type ToolResult struct {
	CallID string
	Kind   ResultKind
	Output string
	// InputRequests (JSON, the server's inputRequests map) and
	// RequestState come with ResultInputRequired.
	InputRequests json.RawMessage
	RequestState  string
}

// DecisionCmd is one ApprovalDecision as the engine sees it.
type DecisionCmd struct {
	Name        string
	OperationID string
	Decision    exagentv1.DecisionKind
	ApprovalID  string
	CallID      string
	PayloadHash string
	Revision    int64
	Actor       exagentv1.Actor
	Reason      string
	Outcome     exagentv1.ResolveOutcome
	Evidence    string
	// Arguments (Approve only) are the edited call's arguments as the
	// decision carries them (JSON text); "" edits nothing.
	Arguments string
	// Scope (Approve only): Run also approves later calls of the tool.
	Scope exagentv1.DecisionScope
	// Answer (Answer only) is the answer as the decision carries it (JSON
	// text); Action is Accept (the default), Decline or Cancel.
	Answer string
	Action exagentv1.AnswerAction
	// Identities is what the caller knows about the run's own identities
	// (namespace, the manager's, whether requestedBy is sealed); Authorize
	// refuses the ones that never decide.
	Identities Identities
	// Ancestors of a child run, parent first, and their identities: the
	// decision must pass each one's policy too (AuthorizeAncestors).
	Ancestors          []Ancestor
	AncestorIdentities []Identities
	// Sealed are the receipts the run's segments hold
	// (segment.SealedReceipts of its chain): the caller reads them when
	// NeedSealedReceipts says the operation may be among them, so a
	// repeated decision whose receipt was sealed still returns it instead
	// of being judged as a new one.
	Sealed []exagentv1.Receipt
}
