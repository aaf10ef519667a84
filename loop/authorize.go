package loop

import (
	"fmt"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// serviceAccountPrefix is how the apiserver names a ServiceAccount user.
const serviceAccountPrefix = "system:serviceaccount:"

// Authorize applies the policy's own checks on who may decide: the
// approvers lists and forbidSelfApproval. RBAC (the SubjectAccessReview) is
// the caller's; this function is pure so the webhook and the controller run
// the very same checks. An absent or empty approvers means RBAC alone.
// The error is a *Error of KindForbidden naming the failed check.
func Authorize(policy exagentv1.PolicySpec, run *exagentv1.AgentRunSpec, actor exagentv1.Actor) error {
	if actor.Username == "" {
		return errorf(KindForbidden, ReasonForbidden, "the decision has no authenticated actor")
	}
	if policy.ForbidSelfApproval && run != nil && run.RequestedBy != nil {
		req := run.RequestedBy.Username
		if req != "" && (actor.Username == req || actor.ImpersonatedBy == req) {
			return errorf(KindForbidden, ReasonForbidden,
				"forbidSelfApproval: %q requested the run and may not decide on it", req)
		}
	}
	a := policy.Approvers
	if a == nil || (len(a.Users) == 0 && len(a.Groups) == 0 && len(a.ServiceAccounts) == 0) {
		return nil
	}
	for _, u := range a.Users {
		if u == actor.Username {
			return nil
		}
	}
	for _, g := range a.Groups {
		for _, ag := range actor.Groups {
			if g == ag {
				return nil
			}
		}
	}
	if sa, ok := strings.CutPrefix(actor.Username, serviceAccountPrefix); ok {
		if ns, name, ok := strings.Cut(sa, ":"); ok {
			for _, s := range a.ServiceAccounts {
				if s == ns+"/"+name {
					return nil
				}
			}
		}
	}
	return errorf(KindForbidden, ReasonForbidden,
		"policy.approvers: %q (groups %v) is not listed: users %v, groups %v, serviceAccounts %v",
		actor.Username, actor.Groups, a.Users, a.Groups, a.ServiceAccounts)
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
