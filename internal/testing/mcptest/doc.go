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

// Package mcptest runs a real MCP server, built with the official SDK's own
// server package, on 127.0.0.1 for the tests of the mcp tool kind: it
// records what each tools/call carried (idempotency key in header and
// _meta, credentials) and lets a test change a tool's schema, remove a
// tool, make calls hang, or take the whole server down and back. Hang and
// Paging are hostile servers: Hang accepts connections and never answers;
// Paging answers tools/list with pages of one huge tool, without end.
package mcptest
