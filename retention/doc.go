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

// Package retention owns the reaper: it deletes the ended runs whose
// retention says so — past their TTL (the run's, its Agent's or the
// manager's default) or no longer among their Agent's keepLast newest —
// each tree deepest first, each run archived first to its Agent's
// retention.archive sink when it has one, the attempt journaled through
// the store. Its queue comes from the cache's run and Agent events; its
// workers are shared fairly among namespaces (retention_fair.go), so one
// tenant's slow sink never holds another's deletions. What a deleted run
// owned (segments, decisions, children) goes with it through the
// garbage collector. A conversation's turns are never reaped one by one:
// an idle conversation goes whole, every turn archived first, then the
// Conversation, whose turns the garbage collector deletes
// (retention_conversation.go). The decision of what is due is the
// engine's (loop.Reapable, loop.ConversationReapable, loop.ArchiveCovers).
package retention
