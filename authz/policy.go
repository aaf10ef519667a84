package authz

import (
	"fmt"
	"slices"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// serviceAccountPrefix is how the apiserver names a ServiceAccount user.
const serviceAccountPrefix = "system:serviceaccount:"

// CheckPolicy is the pure part of "who may decide": the Agent's
// policy.approvers when set, then forbidSelfApproval against the run's
// requester. agentName is only used in messages.
//
// An absent or empty approvers list means RBAC alone decides — never
// "everyone": the caller has already required the RBAC verb.
func CheckPolicy(agentName string, policy exagentv1.PolicySpec, run *exagentv1.AgentRunSpec, actor exagentv1.Actor) error {
	if !InApprovers(policy.Approvers, actor) {
		a := policy.Approvers
		return denied(CheckApprovers, fmt.Sprintf(
			"user %q is not in policy.approvers of agent %q (users: %s, groups: %s, serviceAccounts: %s)",
			actor.Username, agentName, list(a.Users), list(a.Groups), list(a.ServiceAccounts)))
	}
	if policy.ForbidSelfApproval {
		if run == nil || run.RequestedBy == nil || run.RequestedBy.Username == "" {
			// Fail closed: without a recorded requester, separation of
			// duties cannot be shown, so nobody may decide.
			return denied(CheckSelfApproval,
				"forbidSelfApproval: the run has no spec.requestedBy, so its requester cannot be told apart from the decider")
		}
		// ImpersonatedBy is compared too, for authenticators that report the
		// impersonator: asking someone to stand in is still deciding alone.
		if req := run.RequestedBy.Username; req == actor.Username || req == actor.ImpersonatedBy {
			return denied(CheckSelfApproval, fmt.Sprintf(
				"forbidSelfApproval: %q requested this run and cannot decide on it", req))
		}
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

func list(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return "[" + strings.Join(s, " ") + "]"
}
