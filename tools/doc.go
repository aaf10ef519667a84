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

// Package tools owns the tool implementations a run's model may call: http
// (POST with an Idempotency-Key, clean failure vs unknown outcome), mcp (a
// tool of an MCP server over streamable HTTP with the official SDK: calls
// in mcp.go, the bounded listing of a server's tools in mcp_list.go) and
// builtin (cluster operations executed by impersonating the run's
// ServiceAccount). Delegation (kind agent) is not a tool here: creating the
// child run is the controllers' effect (controllers/agentrun_delegate.go). Every Invoke returns a loop.ToolResult and never an error:
// a tool's failure is something the model sees, and an outcome the tool
// cannot know is ResultUnknown, which the engine turns into Uncertain.
//
// Builtin outcomes are classified by what may have happened
// (docs/tools.md has the user's version):
//
//   - Get and List have no effect: every failure is ResultFailed.
//   - A write (Scale, Patch, Apply, Delete) that never left the process
//     (refused, DNS, the context ended before a byte was written) or that
//     the apiserver answered with a 4xx is ResultFailed.
//   - A write answered 504 Timeout, ServerTimeout, an etcd timeout or any
//     other 5xx but 501, or whose connection broke after sending, may have
//     been applied. It is re-sent, up to Builtins.MaxAttempts sends with
//     backoff, when idempotent by construction — Scale (absolute replica
//     count), Patch (a JSON merge patch, RFC 7396: applying it twice equals
//     applying it once), Apply (forced server-side apply of the same
//     manifest by one field manager), Delete fenced by the UID read just
//     before it (a re-send answered NotFound or Conflict proves the object
//     gone) — and otherwise ResultUnknown. A re-send's refusal after such
//     an answer stays ResultUnknown: the first send may have caused it.
//   - client-go never re-sends a write on its own (noWriteRetry): that is
//     the tool's decision alone.
//
// What a builtin call may read is bounded, because the manager is shared:
// a List reads pages of object metadata (never whole objects) and fails
// past Builtins.MaxListItems names; every apiserver answer is cut off at
// Builtins.MaxResponseBytes (the call fails, ErrResponseTooLarge); the
// impersonating clients are a bounded LRU per identity
// (builtin_clients.go). Secrets are refused on the resolved resource unless
// the tool sets allowSecrets: their data would land in a transcript every
// viewer of the run can read.
package tools
