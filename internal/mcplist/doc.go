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

// Package mcplist keeps MCP servers' tools/list off the reconcile workers
// (docs/architecture.md §14: no network IO on the shared workers). The run and
// decision workers are shared by every tenant; a server an Agent author
// controls may accept a connection and never answer. So a reconcile never
// lists a server itself: it reads what the Refresher has (Get), and when
// that is not fresh enough for it, Get asks for a refresh and returns at
// once. The reconcile then waits off the worker — it requeues, and is woken
// when the refresh ends.
//
// What the Refresher guarantees, and why:
//   - one tools/list in flight per server key (URL + a hash of the
//     credentials): N runs of one Agent cost one listing, not N;
//   - at most Options.Concurrency listings in flight in all, each bounded
//     by Options.Timeout, and at most Options.PerTenant of them for one
//     tenant (namespace), taken round-robin between tenants: one tenant's
//     hanging servers hold a share of the slots for a timeout at most,
//     never all of them;
//   - a server whose listing failed is not asked again before its backoff
//     ends (exponential per server, capped), and the last error is kept so
//     a waiting run can say why it waits;
//   - a listing carries the instant its fetch began (FetchedAt): a caller
//     that needs the server's state no older than some instant (a claim:
//     since the run became startable) asks with After and is fresh only
//     with a listing begun at or after it;
//   - memory is bounded: at most Options.MaxEntries servers and
//     Options.MaxBytes of listings, and a server no caller asked about for
//     Options.Idle is forgotten (the Agents that used it changed or went
//     away). Credentials are held only while a refresh of theirs is queued
//     or running, never in the cache;
//   - one tenant cannot take the cache from the others: it has at most
//     Options.MaxEntriesPerTenant servers remembered (a further one is
//     refused with a TenantFullError, its own callers' error, and evicts
//     nothing), and room is made from the tenant that holds the most —
//     places or bytes — least recently used first (cache.go);
//   - a listing is bounded while it is read, not once it is whole: the
//     Fetch counts what it reads of one listing, every page together,
//     against Options.MaxListingBytes and stops at it (tools' MCPCatalog
//     does, at its HTTP transport), and what it returns is checked again.
//
// It is memory only and never decides anything: a listing it lost is
// fetched again, and a caller that finds none waits.
package mcplist
