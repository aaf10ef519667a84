package loop

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Conditions computes the run's conditions from the journal; they are a
// view, never memory: Ready (True only when Succeeded), AwaitingApproval
// (True while approvals are pending) and Uncertain (True while a call has
// no confirmed outcome). LastTransitionTime is now; callers merge with
// meta.SetStatusCondition, which keeps it when the status did not change.
func Conditions(s Status, generation int64, now time.Time) []metav1.Condition {
	at := secTime(now)
	mk := func(t string, ok bool, reason, msg string) metav1.Condition {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: truncateUTF8(msg, 32768),
			ObservedGeneration: generation, LastTransitionTime: at}
	}
	readyReason := s.Reason
	if readyReason == "" {
		readyReason = string(s.Phase)
	}
	if readyReason == "" {
		readyReason = "NotStarted"
	}
	out := []metav1.Condition{mk(exagentv1.ConditionReady, s.Phase == exagentv1.PhaseSucceeded, readyReason, s.Message)}

	var pending []string
	for i := range s.Approvals {
		if a := &s.Approvals[i]; a.State == exagentv1.ApprovalPending {
			p := fmt.Sprintf("%s (call %s", a.ID, a.CallID)
			if a.ExpiresAt != nil {
				p += ", expires " + a.ExpiresAt.UTC().Format(time.RFC3339)
			}
			pending = append(pending, p+")")
		}
	}
	if s.Phase == exagentv1.PhaseAwaitingApproval && len(pending) > 0 {
		out = append(out, mk(exagentv1.ConditionAwaitingApproval, true, exagentv1.ReasonPending,
			"pending: "+strings.Join(pending, ", ")))
	} else {
		out = append(out, mk(exagentv1.ConditionAwaitingApproval, false, ReasonNoApproval, "no approval is pending"))
	}

	var uncertain []string
	for i := range s.Calls {
		if c := &s.Calls[i]; c.State == exagentv1.CallUncertain {
			uncertain = append(uncertain, fmt.Sprintf("%s (%s)", c.ID, c.Tool))
		}
	}
	if len(uncertain) > 0 {
		out = append(out, mk(exagentv1.ConditionUncertain, true, exagentv1.ReasonOutcomeUncertain,
			"no confirmed outcome: "+strings.Join(uncertain, ", ")))
	} else {
		out = append(out, mk(exagentv1.ConditionUncertain, false, ReasonNoUncertainCall, "every started call has an outcome"))
	}
	return out
}
