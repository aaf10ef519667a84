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

// Package shard owns how the work of a cluster is divided among managers
// (docs/architecture.md §22): the configured shard list (--shards) and the
// stable hash that places a run's tree on one of them, the shard a manager
// serves (--shard) as the label selector of its cache, and where an
// object belongs (Placer: a namespace's pin, a namespace held whole
// because its AgentBudgets count every run, or the hash of its root).
//
// Nothing here moves anything: the webhook stamps what Placer says at
// creation, the manager's rebalancer relabels what no longer sits where
// Placer says, and the claim fence makes an object seen by two shards at
// once harmless.
package shard
