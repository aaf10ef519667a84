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
// The state is v1beta1.AgentRunStatus itself, so the JSON a controller
// stores is exactly the continuation the engine resumes from. Times the
// engine stores are UTC and truncated to what their JSON form keeps, so a
// decode/encode cycle gives back an equal state.
//
// Each file holds one job and is named for what it owns (claim.go:
// Start, Claim, Checkpoint, Release; policy.go: the Allow/Ask/Deny rules),
// so the file list is the index; `go doc -all ./loop` lists what each
// part exports, with its comment.
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
