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

// Package authz decides whether the author of an ApprovalDecision may decide
// on a run (docs/architecture.md §2 "Who may decide", §13). The admission webhook and
// the controller call the same VerifyDecision, so a webhook bypassed by a
// misconfiguration cannot let a decision through: the controller asks again.
//
// The checks, in order: the decision carries an actor stamped by admission
// (and, with a Signer, the webhook's HMAC over its namespace, spec and the
// UID of the run it was admitted for, so that an actor written by a client
// past a bypassed webhook is refused, and a decision never carries over to
// a run re-created under the same name); a SubjectAccessReview for that
// actor with verb approve (Approve, Deny, Cancel) or resolve (Resolve) on
// agents/approval named after the run's Agent; the identities that never
// decide (the run's own ServiceAccount, the manager's identity — see Self);
// the Agent's policy.approvers when set; forbidSelfApproval against the
// run's spec.requestedBy, which with a Signer counts only when the webhook
// sealed it too. A failed check is a *DeniedError naming what is missing;
// any other error is transient (the apiserver could not be asked) and must
// never be read as "allowed".
//
// MayUseServiceAccount is the admission check of who may have a run act as
// a ServiceAccount (verb "use", else "impersonate", on serviceaccounts).
package authz
