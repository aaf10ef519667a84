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

// One home per limit. Every bound below is a marker of the API types (a
// maxLength, maxItems or maximum of the generated CRDs) that Go code also
// checks or truncates to: the admission webhook, whose pure validation
// stands on its own (the controller and the tests call it without an
// apiserver), and the engine (loop), which bounds every value it stores and
// re-checks what a run created with admission bypassed could carry.
// kubebuilder markers cannot name a Go constant, so each marker repeats the
// number and TestStringBoundsMatchTheCRD and TestCountBoundsMatchTheCRD
// (bounds_test.go) hold the two together, reading the generated CRDs in
// config/crd/bases. The bounds that live beside their types (MaxValueBytes,
// MaxChildRuns, MaxAgentTools, MaxNotifySinks, MaxTreeRuns, …) are held to
// their markers by the same tests.

// Bounds of the string fields the manager writes (their CRD maxLength).
// The code truncates what it stores to these, so a commit is never refused
// by validation after the IO it records has happened. (MaxValueBytes, for
// message contents, arguments, results and output, is beside the segments.)
const (
	// MaxMessageBytes bounds status.message (of runs and decisions), an
	// approval's reason, a resolution's evidence and a decision's reason.
	MaxMessageBytes = 4096
	// MaxIDLength bounds call ids, tool names (an Agent's spec.tools[].name,
	// an mcp tool's model-visible name) and approval ids.
	MaxIDLength = 64
	// MaxRuleNameLength bounds a policy rule's name as journaled.
	MaxRuleNameLength = 128
	// MaxUsernameLength bounds an actor's username (and a resolver's name).
	MaxUsernameLength = 512
	// MaxChildMessageBytes bounds a child run's message mirrored in its parent.
	MaxChildMessageBytes = 1024
	// MaxMCPNameLength bounds an MCP tool's name and title as journaled.
	MaxMCPNameLength = 256
	// MaxMCPServerLength bounds an MCP server's URL as journaled.
	MaxMCPServerLength = 2048
	// MaxConditionMessageBytes bounds a condition's message (metav1.Condition's own bound).
	MaxConditionMessageBytes = 32768
	// MaxNotificationErrorBytes bounds a notification record's lastError.
	MaxNotificationErrorBytes = 512
	// MaxRunUIDLength bounds an ApprovalDecision's spec.runUID.
	MaxRunUIDLength = 64
	// MaxOperationIDLength bounds an ApprovalDecision's spec.operationID
	// (by default the decision's name, an object name of at most 253
	// characters) and the operationIDs the run journals from it.
	MaxOperationIDLength = 253
	// MaxPayloadHashLength bounds a payload hash: an ApprovalDecision's
	// spec.payloadHash and the hashes a run journals for its calls.
	MaxPayloadHashLength = 128
	// MaxInputBytes bounds an AgentRun's spec.input: it becomes the run's
	// first user message, so it is at most what a message's content may be.
	MaxInputBytes = MaxValueBytes
)

// Bounds of what a run journals for a question (status.approvals[].question)
// and for an MCP server's input requests (status.calls[].input). The engine
// truncates or refuses what a model or a server sends past them.
const (
	// MaxQuestionTextBytes bounds a question's text.
	MaxQuestionTextBytes = 4096
	// MaxQuestionChoices bounds the choices a question offers (maxItems).
	MaxQuestionChoices = 32
	// MaxQuestionChoiceLength bounds one choice (items' maxLength).
	MaxQuestionChoiceLength = 256
	// MaxQuestionURLLength bounds a URL elicitation's url.
	MaxQuestionURLLength = 2048
	// MaxQuestionRequestIDLength bounds the MCP server's id of an input request.
	MaxQuestionRequestIDLength = 128
	// MaxAnswerSchemaBytes bounds a question's journaled answer schema
	// (canonical JSON): admission refuses an AskHuman tool's answerSchema
	// larger than that, and the engine a server's requestedSchema.
	MaxAnswerSchemaBytes = 16384
	// MaxInputRequestsBytes bounds an MCP server's inputRequests (canonical
	// JSON) and its requestState, as journaled in calls[].input.
	MaxInputRequestsBytes = 16384
)

// Bounds of lists and counts (their CRD maxItems or maximum).
const (
	// MaxToolCallsPerMessage bounds the tool calls of one assistant message
	// (history[].toolCalls) and of one scripted turn: the engine fails a
	// model response that asks for more.
	MaxToolCallsPerMessage = 32
	// MaxGrants bounds status.grants, the run-wide approvals a run keeps.
	MaxGrants = 64
	// MaxQuorumVotes bounds a quorum (its approvals and each group's
	// count) and so the votes an approval keeps (approvals[].votes).
	MaxQuorumVotes = 16
	// MaxQuorumGroups bounds a quorum's groups.
	MaxQuorumGroups = 8
	// MaxModelRequestsPerMinute bounds model.rateLimit.requestsPerMinute.
	MaxModelRequestsPerMinute = 1000000
	// MaxModelTokensPerMinute bounds model.rateLimit.tokensPerMinute.
	MaxModelTokensPerMinute = 1000000000
	// MaxModelConcurrent bounds model.rateLimit.maxConcurrent.
	MaxModelConcurrent = 1024
)
