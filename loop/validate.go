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
)

// validateContinuation checks that the stored state holds everything the
// next step needs (docs/architecture.md §4.8): the binding, the transcript, the
// pending model response of a batch, and a confirmed outcome for every
// closed call. It fails before any action is returned, and nothing is
// ever rebuilt from an empty value: a Succeeded call without its outcome is
// invalid, not "succeeded with no result". A status that contradicts
// itself (checkIntegrity) is refused first, with ReasonCorruptStatus.
func validateContinuation(s *Status) error {
	if err := checkIntegrity(s); err != nil {
		return err
	}
	if s.Binding == nil || s.Binding.Definition == "" || s.Binding.Model == "" || s.Binding.Policy == "" {
		return invalidf("status.binding (definition, model and policy fingerprints) is missing")
	}
	if len(s.History) == 0 {
		return invalidf("status.history is empty: the transcript was omitted")
	}
	// The user's message opens the transcript; once it is sealed the
	// segments hold it (the chain is verified before any IO).
	// A person's turn that opens a conversation has none until they answer
	// (conversation_human.go).
	hasUser := s.Transcript != nil && s.Transcript.Messages >= 2 || s.Turn != nil && s.Turn.Human
	for i := range s.History {
		if s.History[i].Role == exagentv1.RoleUser {
			hasUser = true
		}
	}
	if !hasUser {
		return invalidf("status.history has no user message")
	}
	if err := validateCursor(s); err != nil {
		return err
	}
	for i := range s.Calls {
		if err := validateCall(&s.Calls[i]); err != nil {
			return err
		}
	}
	for i := range s.Approvals {
		if a := &s.Approvals[i]; a.PayloadHash == "" {
			return invalidf("approval %q has no payloadHash: what it approved was omitted", a.ID)
		}
	}
	return nil
}

func validateCursor(s *Status) error {
	last := &s.History[len(s.History)-1]
	switch s.Cursor.Stage {
	case exagentv1.StageRequest:
		if m := s.Cursor.ModelRequest; m != nil && (m.Attempt <= 0 || m.Request <= 0) {
			return invalidf("cursor.modelRequest is incomplete")
		}
	case exagentv1.StageBatch:
		if s.Turn != nil && s.Turn.Human {
			break // a human participant's turn: its one call is its question (conversation_human.go)
		}
		if last.Role != exagentv1.RoleAssistant || len(last.ToolCalls) == 0 {
			return invalidf("cursor is at a batch but the model response that asked for it is missing")
		}
		idx := stepCalls(s)
		if len(idx) != len(last.ToolCalls) {
			return corruptf("step %d has %d calls in the journal but the response asked for %d",
				s.Cursor.Step, len(idx), len(last.ToolCalls))
		}
		for k, i := range idx {
			if s.Calls[i].ID != last.ToolCalls[k].ID {
				return corruptf("calls of step %d do not match the response (%q vs %q)",
					s.Cursor.Step, s.Calls[i].ID, last.ToolCalls[k].ID)
			}
		}
	case exagentv1.StageFinish:
		if last.Role != exagentv1.RoleAssistant || len(last.ToolCalls) != 0 {
			return invalidf("cursor is at finish but the model's final answer is missing")
		}
	case "":
		return invalidf("status.cursor.stage is missing")
	default:
		return corruptf("cursor.stage %q is not Request, Batch or Finish", s.Cursor.Stage)
	}
	return nil
}

func validateCall(c *exagentv1.ToolCall) error {
	if c.Tool == "" {
		return invalidf("call %q has no tool", c.ID)
	}
	switch c.State {
	case exagentv1.CallStarted:
		if c.IdempotencyKey == "" || c.Attempt <= 0 {
			return invalidf("call %q is Started without its intent (attempt, idempotency key)", c.ID)
		}
	case exagentv1.CallSucceeded, exagentv1.CallFailed, exagentv1.CallRefused, exagentv1.CallDenied:
		if c.Outcome == nil {
			return invalidf("call %q is %s but its outcome was omitted", c.ID, c.State)
		}
	}
	return nil
}
