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

// Package scale owns the published scale test (docs/architecture.md §22,
// docs/operating.md "Scale test"): `make scale` (build tag scale; not part
// of `make test`).
//
// It starts the local control plane (hack/devcluster) and the managers as
// processes with their own identity — the manager's ServiceAccount, bound
// to config/rbac, never the admin — each serving the admission webhooks
// behind one TCP front on the registered webhook port (what a Service in
// front of the manager pods is), and leaves 50,000 AgentRuns in one
// cluster: 40,000 ended, 9,000 waiting for a person's approval and 1,000
// running against a slow model through an idempotent tool, spread over
// three shards. Every figure is a ratio to the same apiserver's write
// ceiling measured first in the same run (a plain status write on a
// schemaless custom resource): the creation burst; the running runs'
// status writes and steps per second with the shards, with one unsharded
// manager on the same load, and with the shards again; the apiserver's and
// each manager's CPU per status write (/proc/PID/stat, the apiserver's
// request counts, the managers' metrics); each manager's RSS per cached
// run; `kubectl approve list -A` and the approver's inbox page as a real
// certificate user; etcd's size; and a shard's manager killed with
// SIGKILL while its runs are mid-call and approvals for its waiting runs
// arrive — the time until every one of its running runs resumed and
// every approval made during the outage was applied, with the tool
// server's journal as the oracle of duplicate effects.
//
// The model and tool servers are real HTTP on 127.0.0.1 (the tool server
// is test/chaos's journal); the report is printed as a markdown table and
// written to bin/scale/report.md. Flags (-scale.ended, -scale.waiting,
// -scale.running, -scale.shards, …) make a small run for development.
package scale
