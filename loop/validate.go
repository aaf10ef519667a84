package loop

import (
	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// validateContinuation checks that the stored state holds everything the
// next step needs (DESIGN.md §4.8): the binding, the transcript, the
// pending model response of a batch, and a confirmed outcome for every
// closed call. It fails before any action is returned, and nothing is
// ever rebuilt from an empty value: a Succeeded call without its outcome is
// invalid, not "succeeded with no result".
func validateContinuation(s *Status) error {
	if s.Binding == nil || s.Binding.Definition == "" || s.Binding.Model == "" || s.Binding.Policy == "" {
		return invalidf("status.binding (definition, model and policy fingerprints) is missing")
	}
	if len(s.History) == 0 {
		return invalidf("status.history is empty: the transcript was omitted")
	}
	hasUser := false
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
		a := &s.Approvals[i]
		if a.ID == "" || a.PayloadHash == "" || findCall(s, a.CallID) < 0 {
			return invalidf("approvals[%d] %q is incomplete or names no call", i, a.ID)
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
		if last.Role != exagentv1.RoleAssistant || len(last.ToolCalls) == 0 {
			return invalidf("cursor is at a batch but the model response that asked for it is missing")
		}
		idx := stepCalls(s)
		if len(idx) != len(last.ToolCalls) {
			return invalidf("step %d has %d calls in the journal but the response asked for %d",
				s.Cursor.Step, len(idx), len(last.ToolCalls))
		}
		for k, i := range idx {
			if s.Calls[i].ID != last.ToolCalls[k].ID {
				return invalidf("calls of step %d do not match the response (%q vs %q)",
					s.Cursor.Step, s.Calls[i].ID, last.ToolCalls[k].ID)
			}
		}
	case exagentv1.StageFinish:
		if last.Role != exagentv1.RoleAssistant || len(last.ToolCalls) != 0 {
			return invalidf("cursor is at finish but the model's final answer is missing")
		}
	default:
		return invalidf("cursor.stage %q is not Request, Batch or Finish", s.Cursor.Stage)
	}
	return nil
}

func validateCall(c *exagentv1.ToolCall) error {
	if c.ID == "" || c.Tool == "" {
		return invalidf("a call has no id or tool")
	}
	switch c.State {
	case exagentv1.CallProposed, exagentv1.CallAllowed, exagentv1.CallPending, exagentv1.CallApproved,
		exagentv1.CallUncertain:
	case exagentv1.CallStarted:
		if c.IdempotencyKey == "" || c.Attempt <= 0 {
			return invalidf("call %q is Started without its intent (attempt, idempotency key)", c.ID)
		}
	case exagentv1.CallSucceeded, exagentv1.CallFailed, exagentv1.CallRefused, exagentv1.CallDenied:
		if c.Outcome == nil {
			return invalidf("call %q is %s but its outcome was omitted", c.ID, c.State)
		}
	default:
		return invalidf("call %q has unknown state %q", c.ID, c.State)
	}
	return nil
}
