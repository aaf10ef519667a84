package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// ValidateDecisionTarget checks that what d decides on is decidable in run
// as it is now: the approval exists and is Pending (Approve, Deny, Cancel of
// one approval), the run waits for approval (Cancel without approvalID), or
// the call is Uncertain (Resolve); and that the revision and payload hash
// the decider saw, when given, are the current ones.
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
	opID := s.OperationID
	if opID == "" {
		opID = d.Name
	}
	for _, r := range run.Status.Receipts {
		if r.OperationID == opID {
			return nil
		}
	}
	if run.Status.Phase.IsTerminal() {
		return field.ErrorList{field.Invalid(spec.Child("runRef", "name"), s.RunRef.Name,
			fmt.Sprintf("run is %s: it takes no more decisions", run.Status.Phase))}
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
		return nil
	case s.ApprovalID == "": // Cancel of the whole waiting run
		if run.Status.Phase != exagentv1.PhaseAwaitingApproval {
			return field.ErrorList{field.Invalid(spec.Child("runRef", "name"), s.RunRef.Name,
				fmt.Sprintf("run is %q, not AwaitingApproval: there is no pending approval to cancel", run.Status.Phase))}
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
	var errs field.ErrorList
	if s.Revision != 0 && s.Revision != a.Revision {
		errs = append(errs, field.Invalid(spec.Child("revision"), s.Revision,
			fmt.Sprintf("the approval is at revision %d: the run changed since you looked", a.Revision)))
	}
	if s.PayloadHash != "" && s.PayloadHash != a.PayloadHash {
		errs = append(errs, field.Invalid(spec.Child("payloadHash"), s.PayloadHash,
			fmt.Sprintf("the pending call's payload hash is %s: the call changed since you looked", a.PayloadHash)))
	}
	return errs
}
