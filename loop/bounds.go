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

import (
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/clip"
)

// Bounds of the API's string and list fields (their CRD maxLength /
// maxItems): each is a constant of api/v1alpha1 (bounds.go), the one home
// of the number the markers repeat. The engine truncates what it stores to
// them so a commit is never refused by validation after the IO it records
// has happened — and because most of the run's status is schemaless in the
// CRD (exagentv1.SchemalessStatusFields), these bounds are the only thing
// that keeps the journal within its documented shape.
//
// Spec-shape rules have one home each: the CRD schema where a marker says
// them, else the admission webhook (webhook/*_validation.go) or the
// ValidatingAdmissionPolicies (config/policy); the user-facing message is
// theirs. The engine re-checks only what it needs to stay correct when a
// run or a decision was created with admission bypassed (no webhook, no
// policy, an edited object): the run's durations (NewEnv: a leaseDuration
// must be positive, never Never), a decision's kind, operation and Resolve
// outcome (Decide, prepare, Resolve), its edited arguments and answer
// against the run (CheckApprove, CheckAnswer), the Agent's policy, quorum
// and parameter schemas (CompilePolicy, CompileArgSchema) — the webhook
// calls these same functions, so their rules live here once — and every
// bound below on what it stores of a model's or an MCP server's answer.
// It refuses such a run or decision with its own error and does not repeat
// the webhook's wording.
const (
	maxContent   = exagentv1.MaxValueBytes          // message content, call args, results, output
	maxMessage   = exagentv1.MaxMessageBytes        // status.message, reasons of decisions
	maxID        = exagentv1.MaxIDLength            // call ids, tool names, approval ids
	maxToolCalls = exagentv1.MaxToolCallsPerMessage // tool calls in one assistant message
	maxRule      = exagentv1.MaxRuleNameLength      // rule names
	maxGrants    = exagentv1.MaxGrants              // run-wide approvals (status.grants)
	maxQuorum    = exagentv1.MaxQuorumVotes         // votes of a quorum (approvals[].votes)
	// maxQuorumGroups bounds a quorum's groups.
	maxQuorumGroups = exagentv1.MaxQuorumGroups
	// maxQuestionText bounds a question's text, maxChoices and maxChoice
	// its choices.
	maxQuestionText = exagentv1.MaxQuestionTextBytes
	maxChoices      = exagentv1.MaxQuestionChoices
	maxChoice       = exagentv1.MaxQuestionChoiceLength
	// maxAnswerSchema bounds the journaled answer schema; an Agent's
	// answerSchema larger than that is refused by admission, and a call
	// asking with one fails.
	maxAnswerSchema = exagentv1.MaxAnswerSchemaBytes
	// maxInputRequests bounds the journaled inputRequests and requestState
	// of an MCP server (untrusted).
	maxInputRequests = exagentv1.MaxInputRequestsBytes

	// maxModelFailures consecutive failed model requests end the run (ModelError).
	maxModelFailures = 3
	// maxResends bounds the automatic re-sends of an idempotent tool whose
	// outcome was lost (docs/architecture.md §4.4, the one opt-in exception).
	maxResends = 3

	// ioReserveDivisor: before an IO, the state must leave budget/ioReserveDivisor
	// free for what the IO's outcome will add.
	ioReserveDivisor = 16
	// decisionReserve is the room kept per pending approval for the decision
	// and receipt it will need (actor, reason, receipt fields).
	decisionReserve = 6 << 10
)

// truncatedMark ends a value the engine had to shorten.
const truncatedMark = "…[truncated]"

// bound truncates s to max bytes, marking the cut; bytes that are not
// UTF-8 become U+FFFD first (see truncateUTF8). Every value the engine
// stores goes through it, so every stored value is valid UTF-8 of at most
// max bytes — and hashes the same once the apiserver gave it back.
func bound(s string, max int) string {
	mark := truncatedMark
	if max <= 2*len(truncatedMark) {
		mark = "" // a short bound keeps what it can of the value itself
	}
	return clip.Bytes(validUTF8(s), max, mark)
}
