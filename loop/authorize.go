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
	"fmt"
	"slices"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// serviceAccountPrefix is how the apiserver names a ServiceAccount user.
const serviceAccountPrefix = "system:serviceaccount:"

// Identities is what the caller knows, beyond the Agent's policy, about the
// identities around a run. The engine cannot learn them from the run alone:
// the namespace is the object's, the manager's identity is the process's,
// and whether spec.requestedBy is trustworthy depends on its admission seal.
type Identities struct {
	// Namespace of the run. With spec.serviceAccountName it names the run's
	// own ServiceAccount (system:serviceaccount:NAMESPACE:NAME), which never
	// decides on the run it acts for. Empty: every ServiceAccount of that
	// name is refused, whatever its namespace (fail closed).
	Namespace string
	// Manager are usernames that never decide on any run: the operator's own
	// identity — it executes the calls, so deciding would approve itself.
	Manager []string
	// RequesterUnverified, when set, says why spec.requestedBy cannot be
	// trusted (its admission seal is missing or does not match the run).
	// forbidSelfApproval then fails closed with it: a requester nobody
	// vouched for cannot be told apart from the decider.
	RequesterUnverified string
}

// Authorize applies the checks on who may decide that are not RBAC: the
// identities that never decide (the run's own ServiceAccount, the
// manager), the approvers list and forbidSelfApproval. RBAC (the
// SubjectAccessReview) is the caller's; this function is pure so the
// engine, the admission webhook and the controller's re-check
// (authz.CheckPolicy) run the very same rules.
// An absent or empty approvers list means RBAC alone, never "everyone".
// forbidSelfApproval fails closed: a run with no recorded (or no verified)
// requester cannot show separation of duties, so nobody may decide on it.
// The error is a *Error of KindForbidden; its Reason names the failed check
// (exagentv1.ReasonNeverADecider, exagentv1.ReasonNotAnApprover, exagentv1.ReasonSelfApproval, exagentv1.ReasonForbidden
// for no actor).
func Authorize(policy exagentv1.PolicySpec, run *exagentv1.AgentRunSpec, ids Identities, actor exagentv1.Actor) error {
	if actor.Username == "" {
		return errorf(KindForbidden, exagentv1.ReasonForbidden, "the decision has no authenticated actor")
	}
	agent := ""
	if run != nil {
		agent = run.AgentRef.Name
	}
	if err := neverDecides(run, ids, actor); err != nil {
		return err
	}
	if a := policy.Approvers; !InApprovers(a, actor) {
		return errorf(KindForbidden, exagentv1.ReasonNotAnApprover,
			"user %q is not in policy.approvers of agent %q (users: %s, groups: %s, serviceAccounts: %s)",
			actor.Username, agent, listString(a.Users), listString(a.Groups), listString(a.ServiceAccounts))
	}
	if !policy.ForbidSelfApproval {
		return nil
	}
	if ids.RequesterUnverified != "" {
		return errorf(KindForbidden, exagentv1.ReasonSelfApproval,
			"forbidSelfApproval: the run's requester is unknown (%s), so it cannot be told apart from the decider; "+
				"re-create the run through the exagent admission webhook", ids.RequesterUnverified)
	}
	if run == nil || run.RequestedBy == nil || run.RequestedBy.Username == "" {
		return errorf(KindForbidden, exagentv1.ReasonSelfApproval,
			"forbidSelfApproval: the run has no spec.requestedBy, so its requester cannot be told apart from the decider")
	}
	// ImpersonatedBy counts too: asking someone to stand in is still deciding alone.
	if req := run.RequestedBy.Username; req == actor.Username || req == actor.ImpersonatedBy {
		return errorf(KindForbidden, exagentv1.ReasonSelfApproval,
			"forbidSelfApproval: %q requested this run and cannot decide on it", req)
	}
	return nil
}

// neverDecides refuses the identities that act for the run: its own
// ServiceAccount (the builtin tools impersonate it, so a run — or whoever
// holds that account's token — could approve its own calls) and the
// manager (which executes them). Whatever the policy says, and before it.
func neverDecides(run *exagentv1.AgentRunSpec, ids Identities, actor exagentv1.Actor) error {
	for _, user := range []string{actor.Username, actor.ImpersonatedBy} {
		if user == "" {
			continue
		}
		if slices.Contains(ids.Manager, user) {
			return errorf(KindForbidden, exagentv1.ReasonNeverADecider,
				"user %q is the exagent manager's own identity: the operator that executes a run's calls never decides on them", user)
		}
		if run != nil && isRunServiceAccount(user, ids.Namespace, run.ServiceAccount()) {
			return errorf(KindForbidden, exagentv1.ReasonNeverADecider,
				"user %q is the run's own ServiceAccount (spec.serviceAccountName %q): the identity a run acts as never decides on it",
				user, run.ServiceAccount())
		}
	}
	return nil
}

// isRunServiceAccount reports whether user is system:serviceaccount:ns:sa;
// with ns unknown, any namespace's ServiceAccount named sa matches.
func isRunServiceAccount(user, ns, sa string) bool {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return false
	}
	gotNS, name, ok := strings.Cut(rest, ":")
	return ok && name == sa && (ns == "" || gotNS == ns)
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
