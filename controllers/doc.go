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

// Package controllers owns the reconcilers that make runs happen and
// their wiring (Setup): the AgentRun reconciler (start, claim, journal
// each model and tool call with intent before IO and outcome before
// advance, pause, finish, recover, expire), the ApprovalDecision
// reconciler (re-verify the actor, apply the decision with
// compare-and-swap, write the receipt) and the Agent reconciler (check
// what an Agent names — Secrets, schemas, MCP listings through the shared
// catalog, delegates — and write Ready and status.tools when they changed;
// information, never a gate). What they write goes through store
// (one Store.Commit per status write, fenced on the claim); model and tool
// IO never runs on a reconcile worker: it is dispatched to
// internal/executor and comes back through a channel source into an
// in-memory inbox. The background tasks are packages of their own that
// Setup adds to the manager: notifications (internal/notify), retention
// (retention). What a deleted run owned is the garbage
// collector's: its children, segments and decisions have it as owner.
package controllers
