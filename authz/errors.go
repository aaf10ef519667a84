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

import "errors"

// Check names the authorization check a decision failed.
type Check string

const (
	// CheckActor: the decision has no stamped actor, or it does not belong
	// to the run it names.
	CheckActor Check = "Actor"
	// CheckRBAC: the SubjectAccessReview for the approve/resolve verb failed.
	CheckRBAC Check = "RBAC"
	// CheckAgent: the run's Agent (whose policy decides) does not exist.
	CheckAgent Check = "AgentNotFound"
	// CheckNeverDecider: the actor is the run's own ServiceAccount or the
	// manager's identity, which never decide (docs/architecture.md §13).
	CheckNeverDecider Check = "NeverADecider"
	// CheckApprovers: the actor is not in the Agent's policy.approvers.
	CheckApprovers Check = "Approvers"
	// CheckSelfApproval: forbidSelfApproval and the actor requested the run.
	CheckSelfApproval Check = "ForbidSelfApproval"
	// CheckAncestors: a child run's ancestor is gone, so its approvers
	// cannot be checked (authz/ancestry.go).
	CheckAncestors Check = "Ancestors"
)

// DeniedError is a definitive "no": the decision must be rejected with
// Message, which says which check failed and what is missing.
type DeniedError struct {
	Check   Check
	Message string
}

func (e *DeniedError) Error() string { return e.Message }

// IsDenied reports whether err is (or wraps) a *DeniedError. Callers reject
// the decision on a denial and retry on anything else.
func IsDenied(err error) bool {
	var d *DeniedError
	return errors.As(err, &d)
}

// DeniedCheck returns the failed check of a denial, or "" for other errors.
func DeniedCheck(err error) Check {
	var d *DeniedError
	if errors.As(err, &d) {
		return d.Check
	}
	return ""
}

func denied(check Check, msg string) error {
	return &DeniedError{Check: check, Message: msg}
}
