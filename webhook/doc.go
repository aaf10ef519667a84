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

// Package webhook owns admission for the exagent.io API, served by the
// manager: thin typed webhooks (admission.Defaulter[T] / Validator[T]) that
// stamp identities from the admission request and delegate to exported pure
// ValidateX(new, old) field.ErrorList functions, plus the decision check of
// package authz (SubjectAccessReview, policy.approvers, forbidSelfApproval).
//
// What is checked where:
//   - ApprovalDecision: mutating stamps spec.actor from the authenticated
//     user, defaults spec.operationID to the object's name and, with
//     WithSigner, signs the decision (authz.Signer); validating
//     re-checks the actor, the target (run and approval exist and are
//     pending, or the call is Uncertain for Resolve) and who may decide.
//     Spec updates are denied; deletes are not intercepted (the receipt
//     lives in the run).
//   - AgentRun: mutating stamps spec.requestedBy from the creating user
//     and exagent.io/admitted-by with the manager's identity (what
//     kubectl approve reads to know a manager serves the run); validating checks durations, Never, names, and that the creator may
//     have the run act as its spec.serviceAccountName (verb "use" or
//     "impersonate" on it, or the Agent lists it in
//     spec.serviceAccountNames; "default" and the manager's child runs are
//     not asked). A missing Agent is otherwise not a rejection: the
//     controller waits with Ready=False, AgentNotFound.
//   - Agent: validating compiles every CEL when, checks tool parameter
//     schemas, unique names and the model provider's settings, refuses
//     Secrets in builtin kinds without allowSecrets, and lets a writer add
//     a name to spec.serviceAccountNames only if they may use it.
//   - AgentRunSegment: validating refuses CREATE for every identity but
//     the manager's own (WithManagerIdentity), and a manager's segment
//     whose name is not its content hash or whose run-uid label and
//     controlling owner are not its run. Updates are refused by the CRD's
//     CEL (immutable); deletes are not intercepted.
//
// With WithNamespaces (--watch-namespaces), runs and decisions in any other
// namespace are refused, saying which namespaces the manager serves: the
// webhook configurations should not have sent them.
//
// Every webhook is failurePolicy Fail: when the manager is down, nothing is
// decided. The controller re-verifies each decision anyway (authz).
package webhook
