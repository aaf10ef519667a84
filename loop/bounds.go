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
	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/clip"
)

// Bounds of the API's string and list fields (their CRD maxLength /
// maxItems). The engine truncates what it stores to them so a commit is
// never refused by validation after the IO it records has happened.
const (
	maxContent   = exagentv1.MaxValueBytes     // message content, call args, results, output
	maxMessage   = exagentv1.MaxMessageBytes   // status.message, reasons of decisions
	maxID        = exagentv1.MaxIDLength       // call ids, tool names, approval ids
	maxToolCalls = 32                          // tool calls in one assistant message
	maxRule      = exagentv1.MaxRuleNameLength // rule names

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
