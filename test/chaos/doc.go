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

// Package chaos is exagent's fault-injection suite (issue 9): real manager
// processes killed with SIGKILL in every window of the durability protocol,
// several managers with no leader election killed at random, an apiserver
// whose answers fail or get lost, a control plane restarted from its etcd
// data directory, and conversations whose managers are killed between
// turns and inside them (R7), and managers killed during a trigger burst
// and around a schedule's ticks (R8) — and, beside them (R6, TestTenants), two
// tenants on one manager: an ordinary one, whose run latency is measured alone
// and again while a hostile one redirects http tools to a denied address,
// streams a 1 GiB model answer, hangs an MCP server and delegates wide,
// each against the bound that must answer it.
//
// The package's non-test files are the oracles every scenario shares: tool
// and model servers that journal each request they receive (ToolServer,
// ModelServer), a recorder of every write of every run (Recorder), a fault
// injector for the manager's rest.Config (FaultInjector), and the offline
// history check (Check) that judges what they recorded, with the
// conversation check (CheckConversations) beside it. The scenarios are
// plain go tests; `make test` runs them small, `make chaos` full size.
package chaos
