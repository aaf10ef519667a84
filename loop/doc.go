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

// Package loop is the pure durable engine of an agent run: the state machine
// of docs/architecture.md §3 as functions over data, policy evaluation, hashing (over
// internal/canonical's canonical JSON), the ledger and the loop driver. It
// never does IO, never reads a clock (every function takes now) and never
// imports a Kubernetes client: controllers read the run, call the engine,
// and commit what it returns with compare-and-swap.
//
// The state is v1alpha1.AgentRunStatus itself, so the JSON a controller
// stores is exactly the continuation the engine resumes from. Times the
// engine stores are UTC and truncated to what their JSON form keeps, so a
// decode/encode cycle gives back an equal state.
//
// Files, one job each:
//
//	contract.go   types shared with callers (Action, Fence, ToolResult, …)
//	env.go        the trusted current configuration: fingerprints, durations, payload hash
//	policy.go     Allow/Ask/Deny rules with CEL `when` over args
//	authorize.go  who never decides, approvers and forbidSelfApproval (RBAC is the caller's)
//	claim.go      Start, Claim, Checkpoint, Release
//	step.go       the driver: the next action and its intent
//	model.go      model outcomes: RecordModelResponse, RecordModelFailure
//	effect.go     tool intents and outcomes: BeginEffect (re-checks args, policy and binding), RecordOutcome
//	argschema.go  tool arguments validated against the parameters JSON Schema (no loader IO)
//	toolbinding.go what a tool's calls do (URL, idempotency, kinds, …), bound by approvals
//	pause.go      Pause: approvals bound to payload hash and revision
//	decide.go     Decide: Approve, Deny, Cancel, Resolve, idempotent by operationID
//	end.go        Finish, Fail
//	unstorable.go FailUnstorable: end a run whose status the store refuses for good
//	seal.go       Seal: what leaves the hot status for segments (values, old entries, receipts);
//	              the segments' format, names and chain are internal/segment's
//	transcript.go the transcript's size and its limit (the Agent's, capped by the manager)
//	expire.go     Expire: deadline and approval expiry
//	recover.go    Recover after a lost lease
//	activetime.go reservations and charges of active time
//	validate.go   omitted data fails before any action
//	integrity.go  a status that contradicts itself fails (CorruptStatus), never panics
//	wakeup.go     the next instant the clock matters
//	retention.go  when an ended run may be deleted (TTL, keepLast) and its archive's journal
//	conditions.go Ready / AwaitingApproval / Uncertain / Ended / Archived computed from the journal
//	text.go       text made storable: valid UTF-8, byte bounds, its JSON-escaped size
//	errors.go     the typed errors callers switch on
//	state.go      the fence on an owner transition's input (lease still valid)
//	owner.go      what a live owner does: Extend (the one lease renewal), CheckOwner, NotStarted, late outcomes
//	bounds.go     the API's string and list bounds every stored value is cut to
//	mcp.go        MCP tools from their servers' listings: schemas, annotations, binding
//	toolcheck.go  a tool's parameters (and an MCP tool's schema) checked as NewEnv checks them
//	delegate.go   delegation: the child's plan and name, its record, its end as the call's outcome
//	reserve.go    a child's budget reserved out of its parent's (the tree's sum never passes the root's)
//	withdraw.go   children a parent no longer awaits: withdrawn, ended, charged
//
// Readings of the design the code commits to (each is documented where it
// is implemented):
//   - Arguments that do not match the tool's parameters schema are a failed
//     call the model sees, decided before policy: never run, never asked.
//   - A changed payload hash (schema, effect configuration, policy or
//     definition fingerprint) means
//     an approval no longer covers the call: at begin-effect the call goes
//     back to Pending and the run pauses again at a new revision. A current
//     Deny refuses it; a looser current policy does not let it run unasked.
//   - Definition (instructions, tool names, kinds and descriptions) or model
//     drift refuses the claim (DefinitionChanged); policy and schemas may
//     change and are re-evaluated at begin-effect instead.
//   - Policy Deny refuses a call and tells the model; onDeny applies to a
//     human's Deny; onExpire Continue refuses the calls whose approval
//     expired undecided and tells the model (expire.go).
//   - Each claim reserves the whole remaining active-time balance and a
//     dead owner's reservation is charged whole, so a crash without a
//     hand-back can exhaust the budget — the seed's "puede agotar su
//     presupuesto". Release, Pause and Finish refund the unused part.
//   - A Cancel with revision 0 applies to the current revision (cancelling
//     only stops work); every other decision must carry the exact revision.
//     Cancel applies in every phase that has not ended, even to a corrupt
//     status; a Cancelled run's Uncertain calls can still be resolved
//     Succeeded or Failed, for the record only.
//   - The revision is bumped at every pause and when a run becomes
//     Uncertain: resolutions bind it too.
package loop
