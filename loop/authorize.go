package loop

import (
	"fmt"
	"slices"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// serviceAccountPrefix is how the apiserver names a ServiceAccount user.
const serviceAccountPrefix = "system:serviceaccount:"

// Authorize applies the policy's own checks on who may decide: the
// approvers lists and forbidSelfApproval. RBAC (the SubjectAccessReview) is
// the caller's; this function is pure so the engine, the admission webhook
// and the controller's re-check (authz.CheckPolicy) run the very same rules.
// An absent or empty approvers list means RBAC alone, never "everyone".
// forbidSelfApproval fails closed: a run with no recorded requester cannot
// show separation of duties, so nobody may decide on it.
// The error is a *Error of KindForbidden; its Reason names the failed check
// (ReasonNotApprover, ReasonSelfApproval, ReasonForbidden for no actor).
func Authorize(policy exagentv1.PolicySpec, run *exagentv1.AgentRunSpec, actor exagentv1.Actor) error {
	if actor.Username == "" {
		return errorf(KindForbidden, ReasonForbidden, "the decision has no authenticated actor")
	}
	agent := ""
	if run != nil {
		agent = run.AgentRef.Name
	}
	if a := policy.Approvers; !InApprovers(a, actor) {
		return errorf(KindForbidden, ReasonNotApprover,
			"user %q is not in policy.approvers of agent %q (users: %s, groups: %s, serviceAccounts: %s)",
			actor.Username, agent, listString(a.Users), listString(a.Groups), listString(a.ServiceAccounts))
	}
	if !policy.ForbidSelfApproval {
		return nil
	}
	if run == nil || run.RequestedBy == nil || run.RequestedBy.Username == "" {
		return errorf(KindForbidden, ReasonSelfApproval,
			"forbidSelfApproval: the run has no spec.requestedBy, so its requester cannot be told apart from the decider")
	}
	// ImpersonatedBy counts too: asking someone to stand in is still deciding alone.
	if req := run.RequestedBy.Username; req == actor.Username || req == actor.ImpersonatedBy {
		return errorf(KindForbidden, ReasonSelfApproval,
			"forbidSelfApproval: %q requested this run and cannot decide on it", req)
	}
	return nil
}

// InApprovers reports whether actor is listed by a: by username, by one of
// its groups, or as a ServiceAccount "namespace/name" (username
// system:serviceaccount:namespace:name). A nil or empty list admits everyone
// who passed RBAC.
func InApprovers(a *exagentv1.Approvers, actor exagentv1.Actor) bool {
	if a == nil || len(a.Users)+len(a.Groups)+len(a.ServiceAccounts) == 0 {
		return true
	}
	if slices.Contains(a.Users, actor.Username) {
		return true
	}
	for _, g := range actor.Groups {
		if slices.Contains(a.Groups, g) {
			return true
		}
	}
	if sa, ok := strings.CutPrefix(actor.Username, serviceAccountPrefix); ok {
		ns, name, ok := strings.Cut(sa, ":")
		if ok && slices.Contains(a.ServiceAccounts, ns+"/"+name) {
			return true
		}
	}
	return false
}

func listString(s []string) string {
	return "[" + strings.Join(s, " ") + "]"
}

// actorString names an actor in messages the model or a person reads.
func actorString(a *exagentv1.Actor) string {
	if a == nil || a.Username == "" {
		return "unknown"
	}
	if a.Impersonated && a.ImpersonatedBy != "" {
		return fmt.Sprintf("%s (impersonated by %s)", a.Username, a.ImpersonatedBy)
	}
	return a.Username
}
