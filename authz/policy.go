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

package authz

import (
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// CheckPolicy is the pure part of "who may decide": the identities that
// never decide (the run's own ServiceAccount, the manager), the Agent's
// policy.approvers when set, then forbidSelfApproval against the run's
// requester. The rules themselves live in loop.Authorize, so admission, the
// controller's re-check and the engine can never disagree; this maps the
// engine's verdict onto the Check vocabulary of DeniedError.
//
// An absent or empty approvers list means RBAC alone decides — never
// "everyone": the caller has already required the RBAC verb.
func CheckPolicy(policy exagentv1.PolicySpec, run *exagentv1.AgentRunSpec, ids loop.Identities, actor exagentv1.Actor) error {
	err := loop.Authorize(policy, run, ids, actor)
	e, ok := loop.AsError(err)
	if !ok {
		return err
	}
	return CheckPolicyError(e)
}

// CheckPolicyError maps an engine authorization error onto a DeniedError.
func CheckPolicyError(e *loop.Error) error {
	switch e.Reason {
	case exagentv1.ReasonNeverADecider:
		return denied(CheckNeverDecider, e.Message)
	case exagentv1.ReasonNotAnApprover:
		return denied(CheckApprovers, e.Message)
	case exagentv1.ReasonSelfApproval:
		return denied(CheckSelfApproval, e.Message)
	default:
		return denied(CheckActor, e.Message)
	}
}

// checkDecisionPolicy is CheckPolicy for a decision about approval id of
// run: a conversation's human participant's turn is answered by its
// people alone (loop.AuthorizeDecision).
func checkDecisionPolicy(policy exagentv1.PolicySpec, run *exagentv1.AgentRun, id string, ids loop.Identities, actor exagentv1.Actor) error {
	err := loop.AuthorizeDecision(policy, &run.Status, id, &run.Spec, ids, actor)
	e, ok := loop.AsError(err)
	if !ok {
		return err
	}
	return CheckPolicyError(e)
}
