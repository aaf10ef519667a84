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
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// ValidateDecisionTarget checks that what d decides on is decidable in run
// as it is now: the approval exists and is Pending (Approve, Deny, Cancel of
// one approval), the run has not ended (Cancel without approvalID: every
// other phase can be cancelled, a run not started yet included), or the
// call is Uncertain (Resolve — of an Uncertain run, or, for the record
// only, of a Cancelled one); and that the revision and payload hash the
// decider saw, when given, are the current ones.
//
// A decision whose operationID already has a receipt in the run passes: it
// is a replay (GitOps re-applying a deleted decision, a retried kubectl),
// and the controller answers it with the stored receipt or a conflict.
//
// This is a courtesy to the decider — a stale decision fails at once with
// the reason instead of landing as Rejected. The controller checks the same
// things inside its compare-and-swap, which is what makes them hold.
func ValidateDecisionTarget(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) field.ErrorList {
	spec := field.NewPath("spec")
	s := &d.Spec
	if replayed(d, run) {
		return nil
	}
	phase := run.Status.Phase
	recordOnly := s.Decision == exagentv1.DecisionResolve && phase == exagentv1.PhaseCancelled
	if phase.IsTerminal() && !recordOnly {
		return field.ErrorList{field.Invalid(spec.Child("runRef", "name"), s.RunRef.Name,
			fmt.Sprintf("run is %s: it takes no more decisions", phase))}
	}

	switch {
	case s.Decision == exagentv1.DecisionResolve:
		call := run.Status.Call(s.CallID)
		if call == nil {
			return field.ErrorList{field.NotFound(spec.Child("callID"), s.CallID)}
		}
		if call.State != exagentv1.CallUncertain {
			return field.ErrorList{field.Invalid(spec.Child("callID"), s.CallID,
				fmt.Sprintf("call is %s, not Uncertain: only an Uncertain call can be resolved", call.State))}
		}
		if recordOnly && s.Outcome == exagentv1.ResolveRetry {
			return field.ErrorList{field.Invalid(spec.Child("outcome"), s.Outcome,
				"the run is Cancelled: nothing runs again, so a call cannot be retried; resolve it Succeeded or Failed to record what happened")}
		}
		return nil
	case s.ApprovalID == "": // Cancel of the whole run, in whatever phase it is
		if s.Revision != 0 && s.Revision != run.Status.Revision {
			return field.ErrorList{field.Invalid(spec.Child("revision"), s.Revision,
				fmt.Sprintf("the run is at revision %d: it changed since you looked (omit revision to cancel whatever it is doing now)",
					run.Status.Revision))}
		}
		return nil
	}

	a := run.Status.Approval(s.ApprovalID)
	if a == nil {
		return field.ErrorList{field.NotFound(spec.Child("approvalID"), s.ApprovalID)}
	}
	if a.State != exagentv1.ApprovalPending {
		return field.ErrorList{field.Invalid(spec.Child("approvalID"), s.ApprovalID,
			fmt.Sprintf("approval is %s, not Pending", a.State))}
	}
	switch question := a.IsQuestion(); {
	case question && (s.Decision == exagentv1.DecisionApprove || s.Decision == exagentv1.DecisionDeny):
		return field.ErrorList{field.Invalid(spec.Child("decision"), s.Decision,
			fmt.Sprintf("%s is a question, not a yes or no: answer it (kubectl approve answer %s %s --text …), or decline it (--decline)",
				a.ID, run.Name, a.ID))}
	case !question && s.Decision == exagentv1.DecisionAnswer:
		return field.ErrorList{field.Invalid(spec.Child("decision"), s.Decision,
			fmt.Sprintf("%s asks for a yes or no, not an answer: approve or deny it", a.ID))}
	}
	var errs field.ErrorList
	if s.Revision != 0 && s.Revision != a.Revision {
		errs = append(errs, field.Invalid(spec.Child("revision"), s.Revision,
			fmt.Sprintf("the approval is at revision %d: the run changed since you looked", a.Revision)))
	}
	current := a.CurrentPayloadHash()
	switch {
	case s.PayloadHash == "" || s.PayloadHash == current:
	case a.Edit != nil && s.PayloadHash == a.PayloadHash && s.Decision != exagentv1.DecisionApprove:
		// Refusing either version of an edited call is always safe.
	case a.Edit != nil && s.PayloadHash == a.PayloadHash:
		errs = append(errs, field.Invalid(spec.Child("payloadHash"), s.PayloadHash,
			fmt.Sprintf("the call was edited by %s: the edited call's payload hash is %s, and a vote on the model's version does not count; "+
				"look at the edited call (kubectl approve show) and vote again", a.Edit.Editor.Username, current)))
	default:
		errs = append(errs, field.Invalid(spec.Child("payloadHash"), s.PayloadHash,
			fmt.Sprintf("the pending call's payload hash is %s: the call changed since you looked", current)))
	}
	return errs
}

// ValidateDecisionRun checks that the run d names is the one its decider
// saw: a spec.runUID other than the run's UID means the run was deleted
// and re-created under the same name since — possibly with another call
// under the same approval ID — and the decision would bind a person's
// yes to a call they never read. A decision without runUID (written by
// hand, GitOps) is not checked here; revision and payload hash still are.
// Unlike the target checks it holds for a replay too: a receipt of the
// old run says nothing about the new one.
func ValidateDecisionRun(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) field.ErrorList {
	if msg := d.Spec.StaleRunUID(string(run.UID)); msg != "" {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "runUID"), d.Spec.RunUID, msg)}
	}
	return nil
}

// ValidateDecisionEdit checks, for an Approve, what the engine checks
// beyond the target (loop.CheckApprove): a second vote by the same person
// under a quorum; edited arguments against the tool's schema and the
// policy (an edit the policy denies, or a rule that forbids edits, is
// refused with the reason); scope Run against the rule's sticky. Nothing
// is checked when the Agent cannot be read or its configuration is
// invalid: authorization has already refused a decision on such a run, or
// the controller will reject it with the reason.
func ValidateDecisionEdit(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun, agent *exagentv1.Agent) field.ErrorList {
	s := &d.Spec
	if s.Decision != exagentv1.DecisionApprove || agent == nil || replayed(d, run) {
		return nil
	}
	env, err := loop.NewEnv(loop.EnvInput{RunUID: string(run.UID), RunName: run.Name, RunNamespace: run.Namespace, Run: &run.Spec,
		Agent: &agent.Spec, AgentGeneration: agent.Generation})
	if err != nil {
		return nil
	}
	cmd := loop.DecisionCmd{Name: d.Name, OperationID: s.OperationID, Decision: s.Decision, ApprovalID: s.ApprovalID,
		PayloadHash: s.PayloadHash, Revision: s.Revision, Arguments: s.EditedArguments(), Scope: s.Scope}
	if s.Actor != nil {
		cmd.Actor = *s.Actor
	}
	err = loop.CheckApprove(run.Status, env, cmd)
	if err == nil {
		return nil
	}
	msg := err.Error()
	if e, ok := loop.AsError(err); ok {
		msg = e.Message
	}
	path := field.NewPath("spec", "approvalID")
	switch {
	case s.Arguments != nil && !strings.Contains(msg, "already voted") && !strings.Contains(msg, "sticky"):
		path = field.NewPath("spec", "arguments")
	case s.Scope == exagentv1.ScopeRun && !strings.Contains(msg, "already voted"):
		path = field.NewPath("spec", "scope")
	}
	// The value is the decision's own: the message says what is wrong with it.
	return field.ErrorList{field.Invalid(path, field.OmitValueType{}, msg)}
}

// ValidateDecisionAnswer checks an Answer against the question it answers,
// with the engine's own rules (loop.CheckAnswer): the answer matches the
// question's journaled schema. The findings name where in the answer.
func ValidateDecisionAnswer(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) field.ErrorList {
	s := &d.Spec
	if s.Decision != exagentv1.DecisionAnswer || replayed(d, run) {
		return nil
	}
	cmd := loop.DecisionCmd{Name: d.Name, OperationID: s.OperationID, Decision: s.Decision, ApprovalID: s.ApprovalID,
		Answer: s.AnswerJSON(), Action: s.Action}
	err := loop.CheckAnswer(run.Status, cmd)
	if err == nil {
		return nil
	}
	msg := err.Error()
	if e, ok := loop.AsError(err); ok {
		msg = e.Message
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "answer"), field.OmitValueType{}, msg)}
}

// replayed reports whether d's operation already has a receipt in the run:
// a replay, which the controller answers with that receipt or a conflict.
func replayed(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) bool {
	opID := d.Spec.OperationID
	if opID == "" {
		opID = d.Name
	}
	for _, r := range run.Status.Receipts {
		if r.OperationID == opID {
			return true
		}
	}
	return false
}
