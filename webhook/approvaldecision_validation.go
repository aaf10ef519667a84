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

package webhook

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

var decisionKinds = []string{
	string(exagentv1.DecisionApprove), string(exagentv1.DecisionDeny),
	string(exagentv1.DecisionCancel), string(exagentv1.DecisionResolve), string(exagentv1.DecisionAnswer),
}

var answerActions = []string{
	string(exagentv1.AnswerAccept), string(exagentv1.AnswerDecline), string(exagentv1.AnswerCancel),
}

// ValidateApprovalDecision checks a new decision on its own. That its spec
// never changes afterwards — a decision is a write-once record, and a
// changed one would be a second decision under the first one's receipt —
// is the admission policy's rule, in one place
// (config/policy/approvaldecision-spec.yaml); old is ignored.
func ValidateApprovalDecision(newObj, _ *exagentv1.ApprovalDecision) field.ErrorList {
	spec := field.NewPath("spec")
	s := &newObj.Spec
	errs := validateObjectName(spec.Child("runRef", "name"), s.RunRef.Name)
	errs = append(errs, validateID(spec.Child("approvalID"), s.ApprovalID)...)
	errs = append(errs, validateID(spec.Child("callID"), s.CallID)...)

	switch s.Decision {
	case exagentv1.DecisionApprove, exagentv1.DecisionDeny:
		if s.ApprovalID == "" {
			errs = append(errs, field.Required(spec.Child("approvalID"), fmt.Sprintf("decision %s names the approval it decides", s.Decision)))
		}
	case exagentv1.DecisionAnswer:
		if s.ApprovalID == "" {
			errs = append(errs, field.Required(spec.Child("approvalID"), "decision Answer names the question it answers"))
		}
		errs = append(errs, validateAnswer(spec, s)...)
	case exagentv1.DecisionCancel:
		// approvalID is optional: without it the whole waiting run is cancelled.
	case exagentv1.DecisionResolve:
		if s.CallID == "" {
			errs = append(errs, field.Required(spec.Child("callID"), "decision Resolve names the Uncertain call it resolves"))
		}
		if s.ApprovalID != "" {
			errs = append(errs, field.Forbidden(spec.Child("approvalID"), "decision Resolve targets a call: set callID, not approvalID"))
		}
		switch s.Outcome {
		case exagentv1.ResolveSucceeded, exagentv1.ResolveFailed, exagentv1.ResolveRetry:
		case "":
			errs = append(errs, field.Required(spec.Child("outcome"), "decision Resolve says what happened: Succeeded, Failed or Retry"))
		default:
			errs = append(errs, field.NotSupported(spec.Child("outcome"), s.Outcome,
				[]string{string(exagentv1.ResolveSucceeded), string(exagentv1.ResolveFailed), string(exagentv1.ResolveRetry)}))
		}
	case "":
		errs = append(errs, field.Required(spec.Child("decision"), ""))
	default:
		errs = append(errs, field.NotSupported(spec.Child("decision"), s.Decision, decisionKinds))
	}
	if s.Decision != exagentv1.DecisionResolve {
		if s.CallID != "" {
			errs = append(errs, field.Forbidden(spec.Child("callID"), "only with decision Resolve; approvals are named by approvalID"))
		}
		if s.Outcome != "" {
			errs = append(errs, field.Forbidden(spec.Child("outcome"), "only with decision Resolve"))
		}
		if s.Evidence != "" {
			errs = append(errs, field.Forbidden(spec.Child("evidence"), "only with decision Resolve"))
		}
	}
	if s.Decision != exagentv1.DecisionAnswer {
		if s.Answer != nil {
			errs = append(errs, field.Forbidden(spec.Child("answer"), "only with decision Answer"))
		}
		if s.Action != "" {
			errs = append(errs, field.Forbidden(spec.Child("action"), "only with decision Answer"))
		}
	}
	if s.Decision != exagentv1.DecisionApprove {
		if s.Arguments != nil {
			errs = append(errs, field.Forbidden(spec.Child("arguments"), "only with decision Approve: an edited call is approved, never denied"))
		}
		if s.Scope != "" {
			errs = append(errs, field.Forbidden(spec.Child("scope"), "only with decision Approve"))
		}
	}
	switch s.Scope {
	case "", exagentv1.ScopeCall, exagentv1.ScopeRun:
	default:
		errs = append(errs, field.NotSupported(spec.Child("scope"), s.Scope, []string{string(exagentv1.ScopeCall), string(exagentv1.ScopeRun)}))
	}
	if s.Arguments != nil {
		errs = append(errs, validateEditedArguments(spec.Child("arguments"), s.Arguments.Raw)...)
	}
	if s.Revision < 0 {
		errs = append(errs, field.Invalid(spec.Child("revision"), s.Revision, "must not be negative"))
	}
	if len(s.RunUID) > exagentv1.MaxRunUIDLength {
		errs = append(errs, field.TooLong(spec.Child("runUID"), "", exagentv1.MaxRunUIDLength))
	}
	if len(s.PayloadHash) > exagentv1.MaxPayloadHashLength {
		errs = append(errs, field.TooLong(spec.Child("payloadHash"), "", exagentv1.MaxPayloadHashLength))
	}
	if len(s.OperationID) > exagentv1.MaxOperationIDLength {
		errs = append(errs, field.TooLong(spec.Child("operationID"), "", exagentv1.MaxOperationIDLength))
	}
	if len(s.Reason) > exagentv1.MaxMessageBytes {
		errs = append(errs, field.TooLong(spec.Child("reason"), "", exagentv1.MaxMessageBytes))
	}
	if len(s.Evidence) > exagentv1.MaxMessageBytes {
		errs = append(errs, field.TooLong(spec.Child("evidence"), "", exagentv1.MaxMessageBytes))
	}
	return append(errs, validateActor(spec.Child("actor"), s.Actor)...)
}

// validateEditedArguments checks the shape of an edited call's arguments:
// a JSON object no larger than a call's arguments may be. Whether the tool
// takes them is checked against the run (ValidateDecisionEdit).
func validateEditedArguments(path *field.Path, raw []byte) field.ErrorList {
	if len(raw) > exagentv1.MaxValueBytes {
		return field.ErrorList{field.TooLong(path, "", exagentv1.MaxValueBytes)}
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return field.ErrorList{field.Invalid(path, "", "must be a JSON object: the call's arguments as they should run")}
	}
	return nil
}

// validateAnswer checks the shape of an Answer: an action MCP knows, and
// an answer — JSON no larger than a call's result may be — exactly when
// the action is Accept. Whether it matches the question's schema is
// checked against the run (ValidateDecisionAnswer).
func validateAnswer(spec *field.Path, s *exagentv1.ApprovalDecisionSpec) field.ErrorList {
	switch s.Action {
	case "", exagentv1.AnswerAccept:
		if s.Answer == nil || len(s.Answer.Raw) == 0 {
			return field.ErrorList{field.Required(spec.Child("answer"),
				"an answer with action Accept carries the answer (kubectl approve answer --text, --set or -f); to refuse, use action Decline")}
		}
	case exagentv1.AnswerDecline, exagentv1.AnswerCancel:
		if s.Answer != nil {
			return field.ErrorList{field.Forbidden(spec.Child("answer"), fmt.Sprintf("action %s gives no answer: remove answer", s.Action))}
		}
		return nil
	default:
		return field.ErrorList{field.NotSupported(spec.Child("action"), s.Action, answerActions)}
	}
	if len(s.Answer.Raw) > exagentv1.MaxValueBytes {
		return field.ErrorList{field.TooLong(spec.Child("answer"), "", exagentv1.MaxValueBytes)}
	}
	if !json.Valid(s.Answer.Raw) {
		return field.ErrorList{field.Invalid(spec.Child("answer"), field.OmitValueType{}, "must be JSON")}
	}
	return nil
}

func validateID(path *field.Path, id string) field.ErrorList {
	if len(id) > exagentv1.MaxIDLength {
		return field.ErrorList{field.TooLong(path, "", exagentv1.MaxIDLength)}
	}
	return nil
}
